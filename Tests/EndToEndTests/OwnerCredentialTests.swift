import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// `owner`, the credential firebase-admin sends when `FIREBASE_DATABASE_EMULATOR_HOST` is set: the
/// admin of a local server without credentials (the README's first command), refused with what to
/// do on a server that has credentials, the admin in emulator mode whatever else is configured.
struct OwnerCredentialTests {
    /// Rules that let nobody but the admin read or write.
    static let closedRules = #"{"rules": {".read": false, ".write": false}}"#

    /// A server with ``closedRules`` and `configure`'s credentials, not in emulator mode.
    static func withServer(
        _ configure: (inout ServerConfiguration) -> Void, _ body: (TestServer) async throws -> Void
    ) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try closedRules.write(toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        try await withTestServer(dataDirectory: folder + "/data") { configuration in
            configuration.rulesFile = folder + "/rules.json"
            configuration.authentication.isEmulator = false
            configure(&configuration)
        } _: { server in
            try await body(server)
        }
    }

    @Test func aLocalServerWithoutCredentialsTakesOwnerAsTheAdmin() async throws {
        try await Self.withServer { _ in
        } _: { server in
            let bearer = [("Authorization", "Bearer owner")]
            #expect(try await server.http(.PUT, "/a.json", body: "1").status == 401, "the rules apply to others")
            let write = try await server.http(.PUT, "/a.json", headers: bearer, body: "1")
            #expect(write.status == 200, "\(write.body)")
            #expect(try await server.http(.GET, "/a.json?auth=owner").json == 1)
            let rules = try await server.http(.GET, "/.settings/rules.json?auth=owner")
            #expect(rules.status == 200, "the rules document is the admin's only: \(rules.body)")

            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            let answer = try await client.request(.auth(credential: "owner"))
            #expect(answer.status == .ok, "\(answer.data)")
            try await client.put("b", 2)
            #expect(try await client.get("b") == 2)
            await client.close()

            // `owner` is all it takes over from the emulator: unsigned tokens are still refused.
            let mock = try await server.http(.GET, "/a.json?auth=\(SignedTokens.unsigned(uid: "ada"))")
            #expect(mock.status == 401 && mock.body.contains("emulator"), "\(mock.body)")
        }
    }

    @Test func aServerWithAnAdminSecretRefusesOwnerSayingWhatToDo() async throws {
        try await Self.withServer { configuration in
            configuration.authentication.adminSecret = SignedTokens.adminSecret
        } _: { server in
            for (name, target, headers) in [
                ("bearer", "/a.json", [("Authorization", "Bearer owner")]), ("auth", "/a.json?auth=owner", []),
            ] {
                let response = try await server.http(.GET, target, headers: headers)
                let message = response.json?["error"]?.stringValue ?? ""
                #expect(response.status == 401, "\(name): \(response.body)")
                #expect(message.contains("admin secret") && message.contains("--emulator"), "\(name): \(message)")
            }
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            let answer = try await client.request(.auth(credential: "owner"))
            #expect(answer.status == .invalidToken)
            #expect(answer.data.stringValue?.contains("--emulator") == true, "\(answer.data)")
            await client.close()
            #expect(try await server.http(.GET, "/a.json?auth=\(SignedTokens.adminSecret)").status == 200)
        }
    }

    @Test func aServerThatVerifiesTokensWithoutAnAdminSecretRefusesOwner() async throws {
        try await Self.withServer { configuration in
            configuration.authentication.sharedSecret = SignedTokens.secret
        } _: { server in
            let response = try await server.http(.GET, "/a.json?auth=owner")
            let message = response.json?["error"]?.stringValue ?? ""
            #expect(response.status == 401)
            #expect(message.contains("--admin-secret") && message.contains("--emulator"), "\(message)")
        }
    }

    @Test func emulatorModeTakesOwnerWhateverElseIsConfigured() async throws {
        try await Self.withServer { configuration in
            configuration.authentication.adminSecret = SignedTokens.adminSecret
            configuration.authentication.sharedSecret = SignedTokens.secret
            configuration.authentication.isEmulator = true
        } _: { server in
            let write = try await server.http(.PUT, "/a.json", headers: [("Authorization", "Bearer owner")], body: "1")
            #expect(write.status == 200, "\(write.body)")
        }
    }

    /// Only a server others cannot reach takes `owner` without being told to.
    @Test func ownerIsTheAdminWithoutCredentialsOnlyOnALoopbackAddress() {
        var configuration = ServerConfiguration()
        for host in ["127.0.0.1", "localhost", "::1"] {
            configuration.host = host
            #expect(configuration.acceptsOwner, "\(host)")
        }
        for host in ["0.0.0.0", "::", "192.0.2.7"] {
            configuration.host = host
            #expect(!configuration.acceptsOwner, "\(host)")
            configuration.authentication.isEmulator = true
            #expect(configuration.acceptsOwner, "\(host) in emulator mode")
            configuration.authentication.isEmulator = false
        }
        configuration.host = "127.0.0.1"
        configuration.authentication.adminSecret = "secret"
        #expect(!configuration.acceptsOwner)
        configuration.authentication.adminSecret = nil
        configuration.authentication.keySet = .json(#"{"keys": []}"#)
        #expect(!configuration.acceptsOwner)
    }
}
