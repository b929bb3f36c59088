import Auth
import Foundation
import Testing
import Tree

struct AuthVariableTests {
    @Test func theAuthVariableHasUIDProviderAndEveryClaim() async throws {
        let verifier = try await TestTokens.verifier()
        let claims = TestTokens.idTokenClaims(adding: ["admin": true, "roles": ["editor"]])
        let token = try await TestTokens.sign(claims, kid: "ec-1")

        guard case .user(let identity) = try await verifier.verify(token) else {
            Issue.record("expected a user")
            return
        }
        let auth = identity.authVariable

        #expect(auth.objectValue?.keys.sorted() == ["provider", "token", "uid"])
        #expect(auth["uid"] == "alice")
        #expect(auth["provider"] == "password")
        #expect(auth["token"] == claims)
        #expect(auth["token"]?["email"] == "alice@example.com")
        #expect(auth["token"]?["admin"] == true)
        #expect(auth["token"]?["firebase"]?["identities"]?["email"] == ["alice@example.com"])
    }

    @Test func anOverrideObjectIsTheAuthVariableAsGiven() throws {
        let override = try AuthVariableOverride(parsing: #"{"uid":"my-service-worker","token":{"admin":true}}"#)

        #expect(override.authVariable == ["uid": "my-service-worker", "token": ["admin": true]])
        #expect(override.uid == "my-service-worker")
        #expect(!override.isUnauthenticated)
    }

    @Test func aNullOverrideIsUnauthenticated() throws {
        let override = try AuthVariableOverride(parsing: "null")

        #expect(override == .unauthenticated)
        #expect(override.isUnauthenticated)
        #expect(override.authVariable == .null)
        #expect(override.uid == nil)
    }

    @Test func theRealtimeAuthvarIsTakenAsAJSONValue() throws {
        let override = try AuthVariableOverride(["uid": "worker", "provider": "custom"])

        #expect(override.authVariable == ["uid": "worker", "provider": "custom"])
    }

    @Test(arguments: [#""alice""#, "[1]", "42", "true", "{uid:", ""])
    func anOverrideThatIsNotAnObjectOrNullIsRefused(text: String) {
        let error = #expect(throws: TokenError.self) { try AuthVariableOverride(parsing: text) }
        guard case .invalidAuthVariableOverride = error else {
            Issue.record("expected invalidAuthVariableOverride, got \(String(describing: error))")
            return
        }
    }
}
