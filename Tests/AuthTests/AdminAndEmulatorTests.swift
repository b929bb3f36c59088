import Auth
import Foundation
import Testing
import Tree

struct AdminAndEmulatorTests {
    @Test func theAdminSecretIsTheAdmin() async throws {
        let verifier = try await TestTokens.verifier { $0.adminSecret = "s3cret-admin" }

        #expect(try await verifier.verify("s3cret-admin") == .admin)
        for nearMiss in ["s3cret-admi", "s3cret-admin ", "S3cret-admin", ""] {
            await #expect(throws: TokenError.self, "\(nearMiss)") { try await verifier.verify(nearMiss) }
        }
    }

    @Test func ownerIsTheAdminOnlyInEmulatorModeOrWhereAccepted() async throws {
        let server = try await TestTokens.verifier { $0.adminSecret = "s3cret-admin" }
        let emulator = try await TestTokens.verifier { $0.isEmulator = true }
        let accepting = try await TestTokens.verifier { $0.acceptsOwner = true }

        #expect(try await emulator.verify("owner") == .admin)
        #expect(try await accepting.verify("owner") == .admin)
        await #expect(throws: TokenError.ownerNotAccepted) { try await server.verify("owner") }
        #expect(TokenError.ownerNotAccepted.description.contains("emulator"))
    }

    @Test func acceptingOwnerDoesNotAcceptUnsignedTokens() async throws {
        let verifier = try await TestTokens.verifier { $0.acceptsOwner = true }

        await #expect(throws: TokenError.algorithmNotAllowed("none")) {
            try await verifier.verify(TestTokens.defaultMockUserToken())
        }
    }

    @Test func anEmptyAdminSecretOrAShortSharedSecretIsAConfigurationError() async throws {
        let emptyAdmin = TokenVerifierConfigurationError.secretTooShort(name: "adminSecret", bytes: 0, minimum: 1)
        let shortShared = TokenVerifierConfigurationError.secretTooShort(name: "sharedSecret", bytes: 31, minimum: 32)
        let short = String(repeating: "s", count: 31)

        await #expect(throws: emptyAdmin) { try await TokenVerifier(configuration: .init(adminSecret: "")) }
        await #expect(throws: shortShared) { try await TokenVerifier(configuration: .init(sharedSecret: short)) }
        _ = try await TokenVerifier(configuration: .init(sharedSecret: short + "s", adminSecret: "a"))
    }

    @Test func theSDKsMockUserTokenIsRefusedOutsideEmulatorMode() async throws {
        let verifier = try await TestTokens.verifier()

        await #expect(throws: TokenError.algorithmNotAllowed("none")) {
            try await verifier.verify(TestTokens.defaultMockUserToken())
        }
    }

    @Test func theSDKsMockUserTokenIsAUserInEmulatorMode() async throws {
        let verifier = try await TestTokens.verifier { $0.isEmulator = true }

        let credential = try await verifier.verify(TestTokens.defaultMockUserToken(uid: "mock-user"))

        guard case .user(let identity) = credential else {
            Issue.record("expected a user, got \(credential)")
            return
        }
        #expect(identity.uid == "mock-user")
        #expect(identity.provider == "custom")
        #expect(identity.token["aud"] == "demo-project")
        // Its `exp` (3600, in 1970) is not checked, so it does not end the session either.
        #expect(identity.expiresAt == nil)
    }

    @Test func aMockUserTokenCarriesTheClaimsGivenToTheSDK() async throws {
        let verifier = try await TestTokens.verifier { $0.isEmulator = true }
        let token = TestTokens.mockUserToken(
            TestTokens.idTokenClaims(
                uid: "bob", adding: ["admin": true, "firebase": ["sign_in_provider": "anonymous"]])
        )

        guard case .user(let identity) = try await verifier.verify(token) else {
            Issue.record("expected a user")
            return
        }
        #expect(identity.uid == "bob")
        #expect(identity.provider == "anonymous")
        #expect(identity.token["admin"] == true)
    }

    @Test func anUnsignedTokenWithASignatureIsRefusedInEmulatorMode() async throws {
        let verifier = try await TestTokens.verifier { $0.isEmulator = true }

        await #expect(throws: TokenError.badSignature) {
            try await verifier.verify(TestTokens.defaultMockUserToken() + "c2lnbmVk")
        }
    }

    @Test func signedTokensAreStillCheckedInEmulatorMode() async throws {
        let verifier = try await TestTokens.verifier(secondsAfterIssue: 2 * TestTokens.lifetime) {
            $0.isEmulator = true
        }
        let token = try await TestTokens.sign(TestTokens.idTokenClaims())

        await #expect(throws: TokenError.expired(at: TestTokens.expiry)) { try await verifier.verify(token) }
    }
}
