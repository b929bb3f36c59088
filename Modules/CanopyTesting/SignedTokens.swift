public import Foundation
import JWTKit
public import Tree

/// ID tokens for tests, shaped like Firebase's: HS256 tokens signed with ``secret`` (give a test
/// server `authentication.sharedSecret = SignedTokens.secret`), ES256 tokens whose public key is in
/// ``keySet`` (a server's `--jwks-file`), and the unsigned tokens the Firebase SDKs make for the
/// emulator.
///
/// ```swift
/// let token = try await SignedTokens.token(uid: "ada")
/// let response = try await server.http(.GET, "/users/ada.json?auth=\(token)")
/// ```
public enum SignedTokens {
    /// The HS256 secret tokens are signed with.
    public static let secret = "canopy-end-to-end-shared-secret-0123456789"
    /// An admin secret for test servers (`authentication.adminSecret`).
    public static let adminSecret = "canopy-end-to-end-admin-secret"

    /// The key id of the ES256 key of ``keySetToken(uid:lifetime:claims:)``.
    public static let keyID = "canopy-end-to-end-ec"

    /// Made once per test process; only ``keySet`` shows its public half.
    private static let ecKey = ES256PrivateKey()

    /// A token for `uid` expiring `lifetime` seconds from now (negative: already expired), with
    /// `claims` added, signed (HS256) with `secret`.
    public static func token(
        uid: String, lifetime: TimeInterval = 3600, claims: [String: JSONValue] = [:],
        secret: String = SignedTokens.secret
    ) async throws -> String {
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(payload(uid: uid, lifetime: lifetime, claims: claims))
    }

    /// As ``token(uid:lifetime:claims:secret:)``, signed (ES256, key id ``keyID``) with the key whose
    /// public half is in ``keySet``.
    public static func keySetToken(
        uid: String, lifetime: TimeInterval = 3600, claims: [String: JSONValue] = [:]
    ) async throws -> String {
        let kid = JWKIdentifier(string: keyID)
        let keys = await JWTKeyCollection().add(ecdsa: ecKey, kid: kid)
        return try await keys.sign(payload(uid: uid, lifetime: lifetime, claims: claims), kid: kid)
    }

    /// A JWKS document holding the public key of ``keySetToken(uid:lifetime:claims:)``, for a
    /// server's `--jwks-file`.
    public static var keySet: String {
        get throws {
            guard let (x, y) = ecKey.publicKey.parameters else { throw KeySetError.noPublicKeyParameters }
            let key: JSONValue = [
                "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": .string(keyID),
                "x": .string(x), "y": .string(y),
            ]
            return JSONValue.object(["keys": [key]]).serialized()
        }
    }

    private enum KeySetError: Error {
        case noPublicKeyParameters
    }

    private static func payload(uid: String, lifetime: TimeInterval, claims: [String: JSONValue]) -> Claims {
        let now = Date().timeIntervalSince1970
        var payload: [String: JSONValue] = [
            "sub": .string(uid), "user_id": .string(uid), "iat": .number(now.rounded(.down) - 10),
            "exp": .number((now + lifetime).rounded(.down)),
            "firebase": ["sign_in_provider": "password"],
        ]
        payload.merge(claims) { _, new in new }
        return Claims(payload: .object(payload))
    }

    /// An unsigned token (`alg: none`), as the Firebase SDKs make for the emulator.
    public static func unsigned(uid: String) -> String {
        let header = #"{"alg":"none","type":"JWT"}"#
        let payload = JSONValue.object([
            "sub": .string(uid), "user_id": .string(uid), "iat": 0, "exp": 3600,
            "iss": "https://securetoken.google.com/demo", "aud": "demo",
            "firebase": ["sign_in_provider": "custom", "identities": [:]],
        ]).serialized()
        return base64URL(Data(header.utf8)) + "." + base64URL(Data(payload.utf8)) + "."
    }

    /// Base64url without padding, as JWTs spell their parts.
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private struct Claims: JWTPayload {
        var payload: JSONValue

        init(payload: JSONValue) { self.payload = payload }
        init(from decoder: any Decoder) throws { payload = try JSONValue(from: decoder) }
        func encode(to encoder: any Encoder) throws { try payload.encode(to: encoder) }
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
