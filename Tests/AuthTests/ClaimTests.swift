import Auth
import Foundation
import Testing
import Tree

struct ClaimTests {
    @Test func anExpiredTokenIsAcceptedWithinTheSkewAndRefusedPastIt() async throws {
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(), kid: "rsa-1")
        let withinSkew = try await TestTokens.verifier(secondsAfterIssue: TestTokens.lifetime + 59)
        let pastSkew = try await TestTokens.verifier(secondsAfterIssue: TestTokens.lifetime + 60)

        _ = try await withinSkew.verify(token)
        let error = await #expect(throws: TokenError.expired(at: TestTokens.expiry)) {
            try await pastSkew.verify(token)
        }
        #expect(error?.wireStatus == "expired_token")
    }

    @Test func theClockSkewIsConfigurable() async throws {
        let token = try await TestTokens.sign(TestTokens.idTokenClaims())
        let strict = try await TestTokens.verifier(secondsAfterIssue: TestTokens.lifetime) { $0.clockSkew = 0 }
        let lenient = try await TestTokens.verifier(secondsAfterIssue: TestTokens.lifetime + 250) {
            $0.clockSkew = 300
        }

        await #expect(throws: TokenError.expired(at: TestTokens.expiry)) { try await strict.verify(token) }
        _ = try await lenient.verify(token)
    }

    @Test func aTokenNotYetValidIsRefusedPastTheSkew() async throws {
        let verifier = try await TestTokens.verifier(secondsAfterIssue: 0)
        let soon = TestTokens.issuedAt.addingTimeInterval(30)
        let later = TestTokens.issuedAt.addingTimeInterval(120)
        let validSoon = try await TestTokens.sign(
            TestTokens.idTokenClaims(adding: ["nbf": .number(soon.timeIntervalSince1970)]),
            kid: "ec-1"
        )
        let validLater = try await TestTokens.sign(
            TestTokens.idTokenClaims(adding: ["nbf": .number(later.timeIntervalSince1970)]),
            kid: "ec-1"
        )

        _ = try await verifier.verify(validSoon)
        await #expect(throws: TokenError.notYetValid(claim: "nbf", validFrom: later)) {
            try await verifier.verify(validLater)
        }
    }

    @Test func aTokenIssuedInTheFutureIsRefused() async throws {
        let verifier = try await TestTokens.verifier(secondsAfterIssue: -120)
        let token = try await TestTokens.sign(TestTokens.idTokenClaims())

        let error = await #expect(throws: TokenError.notYetValid(claim: "iat", validFrom: TestTokens.issuedAt)) {
            try await verifier.verify(token)
        }
        #expect(error?.wireStatus == "invalid_token")
    }

    @Test func aSignedTokenMustExpire() async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims().with(["exp": nil]))

        await #expect(throws: TokenError.missingExpiry) { try await verifier.verify(token) }
    }

    @Test func theIssuerMustBeTheConfiguredOne() async throws {
        let verifier = try await TestTokens.verifier()
        let other = try await TestTokens.sign(TestTokens.idTokenClaims(adding: ["iss": "https://evil.example"]))
        let none = try await TestTokens.sign(TestTokens.idTokenClaims().with(["iss": nil]))

        await #expect(throws: TokenError.wrongIssuer(expected: TestTokens.issuer, got: "https://evil.example")) {
            try await verifier.verify(other)
        }
        await #expect(throws: TokenError.wrongIssuer(expected: TestTokens.issuer, got: nil)) {
            try await verifier.verify(none)
        }
    }

    @Test func theAudienceMustIncludeTheConfiguredOne() async throws {
        let verifier = try await TestTokens.verifier()
        let otherString = try await TestTokens.sign(TestTokens.idTokenClaims(adding: ["aud": "other-app"]))
        let otherArray = try await TestTokens.sign(TestTokens.idTokenClaims(adding: ["aud": ["a", "b"]]))
        let including = try await TestTokens.sign(
            TestTokens.idTokenClaims(adding: ["aud": ["other-app", .string(TestTokens.project)]])
        )

        await #expect(throws: TokenError.wrongAudience(expected: TestTokens.project, got: ["other-app"])) {
            try await verifier.verify(otherString)
        }
        await #expect(throws: TokenError.wrongAudience(expected: TestTokens.project, got: ["a", "b"])) {
            try await verifier.verify(otherArray)
        }
        _ = try await verifier.verify(including)
    }

    @Test func issuerAndAudienceAreNotRequiredUnlessConfigured() async throws {
        let verifier = try await TestTokens.verifier {
            $0.issuer = nil
            $0.audience = nil
        }
        let token = try await TestTokens.sign(TestTokens.idTokenClaims().with(["iss": nil, "aud": "anything"]))

        _ = try await verifier.verify(token)
    }

    @Test func theUserComesFromSubThenUIDThenUserID() async throws {
        let verifier = try await TestTokens.verifier()
        let base = TestTokens.idTokenClaims().with(["sub": nil, "user_id": nil])
        let cases: [(JSONValue, String)] = [
            (base.with(["sub": "s", "uid": "u", "user_id": "i"]), "s"),
            (base.with(["uid": "u", "user_id": "i"]), "u"),
            (base.with(["user_id": "i"]), "i"),
            (base.with(["sub": "", "user_id": "i"]), "i"),
        ]
        for (claims, uid) in cases {
            let credential = try await verifier.verify(try await TestTokens.sign(claims))
            guard case .user(let identity) = credential else {
                Issue.record("expected a user, got \(credential)")
                continue
            }
            #expect(identity.uid == uid)
        }
    }

    @Test func aTokenNamingNoUserIsRefused() async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims().with(["sub": nil, "user_id": ""]))

        await #expect(throws: TokenError.missingSubject) { try await verifier.verify(token) }
    }
}
