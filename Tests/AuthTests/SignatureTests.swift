import Auth
import Foundation
import JWTKit
import Testing
import Tree

struct SignatureTests {
    @Test(arguments: [nil, "rsa-1", "ec-1"] as [String?])
    func aValidTokenOfEachAlgorithmVerifies(kid: String?) async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: kid)

        let credential = try await verifier.verify(token)

        guard case .user(let identity) = credential else {
            Issue.record("expected a user, got \(credential)")
            return
        }
        #expect(identity.uid == "alice")
        #expect(identity.provider == "password")
        #expect(identity.expiresAt == TestTokens.expiry)
    }

    @Test func aTokenSignedWithAnotherSecretHasABadSignature() async throws {
        let verifier = try await TestTokens.verifier()
        let forger = await JWTKeyCollection().add(
            hmac: HMACKey(from: "guessed-guessed-guessed-guessed-guessed"), digestAlgorithm: .sha256)
        let token = try await forger.sign(TestClaims(TestTokens.idTokenClaims()))

        await #expect(throws: TokenError.badSignature) { try await verifier.verify(token) }
    }

    @Test(arguments: [nil, "rsa-1", "ec-1"] as [String?])
    func aTamperedPayloadHasABadSignature(kid: String?) async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: kid)
        let tampered = TestTokens.replacingPayload(
            of: token,
            with: TestTokens.idTokenClaims(uid: "mallory", adding: ["admin": true])
        )

        await #expect(throws: TokenError.badSignature) { try await verifier.verify(tampered) }
    }

    @Test func anUnsignedSignaturePartDoesNotPassForAnHS256Token() async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims())
        let stripped = String(token[...(try #require(token.lastIndex(of: ".")))])

        await #expect(throws: TokenError.badSignature) { try await verifier.verify(stripped) }
    }

    @Test func aKeyIDMissingFromTheKeySetIsNamed() async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: "rsa-unknown")

        await #expect(throws: TokenError.unknownKeyID("rsa-unknown")) { try await verifier.verify(token) }
    }

    @Test func anRS256TokenWithoutKeyIDIsRefused() async throws {
        let verifier = try await TestTokens.verifier()
        let signer = await JWTKeyCollection().add(rsa: TestTokens.rsaKey, digestAlgorithm: .sha256)
        let token = try await signer.sign(TestClaims(TestTokens.idTokenClaims()))

        await #expect(throws: TokenError.unknownKeyID(nil)) { try await verifier.verify(token) }
    }

    @Test func aTokenWhoseAlgorithmIsNotItsKeysIsRefused() async throws {
        let verifier = try await TestTokens.verifier()
        let signer = await JWTKeyCollection().add(ecdsa: TestTokens.ecKey, kid: "rsa-1")
        let token = try await signer.sign(TestClaims(TestTokens.idTokenClaims()), kid: "rsa-1")

        await #expect(
            throws: TokenError.algorithmMismatch(keyID: "rsa-1", keyAlgorithm: "RS256", tokenAlgorithm: "ES256")
        ) {
            try await verifier.verify(token)
        }
    }

    @Test func algorithmsCanopyDoesNotVerifyAreNamed() async throws {
        let verifier = try await TestTokens.verifier()
        let key = HMACKey(from: String(repeating: TestTokens.secret, count: 2))
        let signer = await JWTKeyCollection().add(hmac: key, digestAlgorithm: .sha512)
        let token = try await signer.sign(TestClaims(TestTokens.idTokenClaims()))

        await #expect(throws: TokenError.unsupportedAlgorithm("HS512")) { try await verifier.verify(token) }
    }

    @Test func algorithmsWithoutConfiguredKeysAreNotAllowed() async throws {
        let noSecret = try await TestTokens.verifier { $0.sharedSecret = nil }
        let noKeySet = try await TestTokens.verifier { $0.keySet = nil }
        let hs256 = try await TestTokens.sign(TestTokens.idTokenClaims())
        let rs256 = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: "rsa-1")

        await #expect(throws: TokenError.algorithmNotAllowed("HS256")) { try await noSecret.verify(hs256) }
        await #expect(throws: TokenError.algorithmNotAllowed("RS256")) { try await noKeySet.verify(rs256) }
        #expect(try await noSecret.verify(rs256) != .admin)
        #expect(try await noKeySet.verify(hs256) != .admin)
    }
}
