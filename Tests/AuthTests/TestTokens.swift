import Auth
import CryptoExtras
import Foundation
import JWTKit
import Tree

/// Keys that sign the tests' tokens, a verifier that trusts their public halves, and Firebase-shaped claims.
enum TestTokens {
    static let secret = "canopy-test-shared-secret-0123456789"
    static let project = "canopy-test"
    static let issuer = "https://securetoken.google.com/canopy-test"
    /// The instant tokens are issued at; verifiers' clocks are set relative to it.
    static let issuedAt = Date(timeIntervalSince1970: 1_750_000_000)
    static let lifetime: TimeInterval = 3600
    static var expiry: Date { issuedAt.addingTimeInterval(lifetime) }

    /// Made once: generating an RSA key takes a noticeable fraction of a second.
    static let rsaKey: JWTKit.Insecure.RSA.PrivateKey = {
        do {
            return try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        } catch {
            fatalError("cannot generate the test RSA key: \(error)")
        }
    }()
    static let ecKey = ES256PrivateKey()

    /// Signs with the shared secret (HS256, no kid), `rsa-1` (RS256) or `ec-1` (ES256), and with keys the
    /// verifier does not know: `rsa-unknown`, and the EC key under the RSA key's id (`rsa-1-as-ec`).
    static func signer() async -> JWTKeyCollection {
        await JWTKeyCollection()
            .add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            .add(rsa: rsaKey, digestAlgorithm: .sha256, kid: "rsa-1")
            .add(ecdsa: ecKey, kid: "ec-1")
            .add(rsa: rsaKey, digestAlgorithm: .sha256, kid: "rsa-unknown")
    }

    /// A token for `claims`, signed with the key `kid` of ``signer()`` (the shared secret when `nil`).
    static func sign(_ claims: JSONValue, kid: String? = nil) async throws -> String {
        try await signer().sign(TestClaims(claims), kid: kid.map(JWKIdentifier.init(string:)))
    }

    /// The claims of a Firebase ID token for a user who signed in with email and password.
    static func idTokenClaims(
        uid: String = "alice",
        issuedAt: Date = issuedAt,
        adding extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        let seconds = JSONValue.number(issuedAt.timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer),
            "aud": .string(project),
            "auth_time": seconds,
            "user_id": .string(uid),
            "sub": .string(uid),
            "iat": seconds,
            "exp": .number(issuedAt.timeIntervalSince1970 + lifetime),
            "email": "alice@example.com",
            "email_verified": true,
            "firebase": ["identities": ["email": ["alice@example.com"]], "sign_in_provider": "password"],
        ]
        claims.merge(extra) { _, new in new }
        return .object(claims)
    }

    /// The key set file's text: the RSA key with `alg`, the EC key without (the verifier infers ES256).
    static func keySetJSON() throws -> String {
        let (modulus, exponent) = try rsaKey.publicKey.getKeyPrimitives()
        guard let (x, y) = ecKey.publicKey.parameters else { throw TestTokenError.noECParameters }
        let keySet: JSONValue = [
            "keys": [
                [
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": "rsa-1",
                    "n": .string(base64URL(modulus)), "e": .string(base64URL(exponent)),
                ],
                ["kty": "EC", "use": "sig", "kid": "ec-1", "crv": "P-256", "x": .string(x), "y": .string(y)],
            ]
        ]
        return keySet.serialized()
    }

    /// A verifier trusting the shared secret and the key set (written to a temporary file, read and deleted),
    /// requiring the test project's issuer and audience, with its clock `secondsAfterIssue` after ``issuedAt``.
    static func verifier(
        secondsAfterIssue: TimeInterval = 60,
        _ adjust: (inout TokenVerifierConfiguration) -> Void = { _ in }
    ) async throws -> TokenVerifier {
        let folder = FileManager.default.temporaryDirectory.appending(path: "canopy-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: "keys.jwks.json")
        try keySetJSON().write(to: file, atomically: true, encoding: .utf8)

        let now = issuedAt.addingTimeInterval(secondsAfterIssue)
        var configuration = TokenVerifierConfiguration(
            sharedSecret: secret,
            keySet: .file(file),
            issuer: issuer,
            audience: project,
            now: { now }
        )
        adjust(&configuration)
        return try await TokenVerifier(configuration: configuration)
    }

    /// An unsigned token exactly as firebase-js-sdk's `createMockUserToken` builds it (its header says
    /// `type`, not `typ`).
    static func mockUserToken(_ claims: JSONValue) -> String {
        let header: JSONValue = ["alg": "none", "type": "JWT"]
        return [base64URL(Data(header.serialized().utf8)), base64URL(Data(claims.serialized().utf8)), ""]
            .joined(separator: ".")
    }

    /// `createMockUserToken({sub: uid})` for project `demo-project`: `iat` 0, so long expired.
    static func defaultMockUserToken(uid: String = "mock-user") -> String {
        mockUserToken([
            "iss": "https://securetoken.google.com/demo-project",
            "aud": "demo-project",
            "iat": 0,
            "exp": 3600,
            "auth_time": 0,
            "sub": .string(uid),
            "user_id": .string(uid),
            "firebase": ["sign_in_provider": "custom", "identities": [:]],
        ])
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `token` with its payload replaced by `claims`, its header and signature kept.
    static func replacingPayload(of token: String, with claims: JSONValue) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[1] = base64URL(Data(claims.serialized().utf8))
        return parts.joined(separator: ".")
    }
}

enum TestTokenError: Error {
    case noECParameters
}

/// A payload of arbitrary claims, so tests can sign exactly the JSON they mean.
struct TestClaims: JWTPayload {
    var claims: JSONValue

    init(_ claims: JSONValue) {
        self.claims = claims
    }

    init(from decoder: any Decoder) throws {
        claims = try JSONValue(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        try claims.encode(to: encoder)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension JSONValue {
    /// This object with `members` added or replaced (`nil` removes).
    func with(_ members: [String: JSONValue?]) -> JSONValue {
        var object = objectValue ?? [:]
        for (key, value) in members { object[key] = value }
        return .object(object)
    }
}
