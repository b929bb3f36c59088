import Rules
import Testing
import Tree

/// Building the `auth` variable.
struct AuthContextTests {
    @Test func idTokenClaims() throws {
        let claims: JSONValue = [
            "sub": "uid-1", "email": "ada@example.com", "email_verified": true, "admin": true,
            "firebase": ["sign_in_provider": "google.com", "identities": ["google.com": ["123"]]],
        ]
        let auth = try #require(AuthContext(idTokenClaims: claims))
        let rules = try rulesDocument([
            ".read": .string(
                "auth.uid == 'uid-1' && auth.provider == 'google' && auth.token.email_verified == true"
                    + " && auth.token.admin === true && auth.token.firebase.identities['google.com'][0] == '123'")
        ])
        #expect(rules.canRead(.root, auth: auth, root: .empty, now: testNow).isAllowed)
        #expect(AuthContext(idTokenClaims: ["email": "x"]) == nil)
        #expect(AuthContext(idTokenClaims: ["user_id": "u2"])?.variable.child("provider") == Node(.string("custom")))
    }

    @Test func handMadeContexts() throws {
        let auth = AuthContext(uid: "ada", provider: "password", token: try Node(json: ["role": "editor"]))
        #expect(
            try holds(
                "auth.uid == 'ada' && auth.token.role == 'editor'", auth: ["uid": "ada", "token": ["role": "editor"]]))
        let rules = try rulesDocument([".read": "auth.token.role == 'editor'"])
        #expect(rules.canRead(.root, auth: auth, root: .empty, now: testNow).isAllowed)
    }
}
