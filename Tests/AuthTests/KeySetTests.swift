import Auth
import Foundation
import Testing
import Tree

struct KeySetTests {
    @Test func aKeySetCanBeGivenAsText() async throws {
        let now = TestTokens.issuedAt
        let verifier = try await TokenVerifier(
            configuration: .init(keySet: .json(try TestTokens.keySetJSON()), now: { now })
        )
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: "ec-1")

        #expect(try await verifier.verify(token) != .admin)
    }

    @Test func anUnreadableKeySetFileIsAConfigurationError() async throws {
        let missing = URL(filePath: "/nonexistent/canopy/keys.json")

        let error = await #expect(throws: TokenVerifierConfigurationError.self) {
            try await TokenVerifier(configuration: .init(keySet: .file(missing)))
        }
        guard case .unreadableKeySet(let path, _) = error else {
            Issue.record("expected unreadableKeySet, got \(String(describing: error))")
            return
        }
        #expect(path == "/nonexistent/canopy/keys.json")
    }

    static let unusableKeySets: [(json: String, expected: String)] = [
        ("[]", "invalidKeySet"),
        (#"{"keys": []}"#, "invalidKeySet"),
        (#"{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}"#, "unsupportedKey"),
        (#"{"keys": [{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AA"}]}"#, "unsupportedKey"),
        (#"{"keys": [{"kty": "EC", "kid": "ec", "crv": "P-384", "x": "AA", "y": "AA"}]}"#, "unsupportedKey"),
        (#"{"keys": [{"kty": "RSA", "kid": "r", "alg": "RS512", "n": "AQAB", "e": "AQAB"}]}"#, "unsupportedKey"),
        (#"{"keys": [{"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"}]}"#, "unsupportedKey"),
    ]

    @Test(arguments: unusableKeySets)
    func anUnusableKeySetIsAConfigurationError(keySet: (json: String, expected: String)) async throws {
        let error = await #expect(throws: TokenVerifierConfigurationError.self) {
            try await TokenVerifier(configuration: .init(keySet: .json(keySet.json)))
        }

        switch error {
        case .invalidKeySet?: #expect(keySet.expected == "invalidKeySet")
        case .unsupportedKey?: #expect(keySet.expected == "unsupportedKey")
        default: Issue.record("unexpected \(String(describing: error))")
        }
    }

    @Test func twoKeysWithOneIDAreAConfigurationError() async throws {
        let keySet = try TestTokens.keySetJSON().replacingOccurrences(of: "\"ec-1\"", with: "\"rsa-1\"")

        await #expect(throws: TokenVerifierConfigurationError.invalidKeySet(reason: #"two keys have kid "rsa-1""#)) {
            try await TokenVerifier(configuration: .init(keySet: .json(keySet)))
        }
    }
}
