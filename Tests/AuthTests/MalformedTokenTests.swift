import Auth
import Foundation
import Testing
import Tree

struct MalformedTokenTests {
    static let notJWTs: [String] = [
        "",
        "abc",
        "eyJhbGciOiJIUzI1NiJ9.e30",
        "a.b.c.d",
        "!!!.###.$$$",
        TestTokens.base64URL(Data("not json".utf8)) + "." + TestTokens.base64URL(Data("{}".utf8)) + ".",
        TestTokens.base64URL(Data(#"{"alg":"HS256"}"#.utf8)) + "." + TestTokens.base64URL(Data("nope".utf8)) + ".",
        TestTokens.base64URL(Data(#"{"typ":"JWT"}"#.utf8)) + "." + TestTokens.base64URL(Data("{}".utf8)) + ".",
    ]

    @Test(arguments: notJWTs)
    func aCredentialThatIsNotAJWTIsMalformed(credential: String) async throws {
        let verifier = try await TestTokens.verifier()

        let error = await #expect(throws: TokenError.self) { try await verifier.verify(credential) }

        guard case .malformed = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
        #expect(error?.wireStatus == "invalid_token")
    }

    @Test func theMalformedPartIsNamed() async throws {
        let verifier = try await TestTokens.verifier()
        let payload = TestTokens.base64URL(Data("{}".utf8))

        await #expect(throws: TokenError.malformed(reason: #"expected 3 base64url parts separated by ".", found 2"#)) {
            try await verifier.verify("a.b")
        }
        await #expect(throws: TokenError.malformed(reason: "the signature is not base64url")) {
            try await verifier.verify("e30.\(payload).sig+nature/")
        }
    }

    @Test func claimsOfTheWrongTypeAreMalformed() async throws {
        let verifier = try await TestTokens.verifier()
        let token = try await TestTokens.sign(TestTokens.idTokenClaims(adding: ["exp": "tomorrow"]))

        let error = await #expect(throws: TokenError.self) { try await verifier.verify(token) }

        guard case .malformed = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
    }

    @Test func criticalHeaderExtensionsAreRefused() async throws {
        let verifier = try await TestTokens.verifier()
        let header = TestTokens.base64URL(Data(#"{"alg":"HS256","crit":["b64"],"b64":false}"#.utf8))
        let token = header + "." + TestTokens.base64URL(Data("{}".utf8)) + ".c2ln"

        let error = await #expect(throws: TokenError.self) { try await verifier.verify(token) }

        guard case .malformed = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
    }

    @Test func anOversizedCredentialIsRefusedBeforeParsing() async throws {
        let verifier = try await TestTokens.verifier()

        await #expect(throws: TokenError.tooLarge(size: 8193, limit: 8192)) {
            try await verifier.verify(String(repeating: "x", count: 8193))
        }
    }

    @Test func theSizeLimitIsConfigurableAndAppliesToValidTokens() async throws {
        let token = try await TestTokens.sign(TestTokens.idTokenClaims())
        let exact = try await TestTokens.verifier { $0.maximumTokenBytes = token.utf8.count }
        let smaller = try await TestTokens.verifier { $0.maximumTokenBytes = token.utf8.count - 1 }

        _ = try await exact.verify(token)
        await #expect(throws: TokenError.tooLarge(size: token.utf8.count, limit: token.utf8.count - 1)) {
            try await smaller.verify(token)
        }
    }

    @Test func errorsSayWhatWasWrong() {
        let expiry = Date(timeIntervalSince1970: 1_750_003_600)
        #expect(TokenError.expired(at: expiry).description == "token expired at 2025-06-15T16:06:40Z (1750003600)")
        #expect(
            TokenError.tooLarge(size: 9000, limit: 8192).description
                == "token is 9000 bytes, more than the limit of 8192")
        #expect(
            TokenError.wrongAudience(expected: "app", got: ["a", "b"]).description
                == #"token audience "a", "b" does not include "app""#
        )
        #expect(TokenError.algorithmNotAllowed("none").description.contains("emulator mode"))
    }
}
