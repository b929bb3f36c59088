import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// Each kind of failure ends `canopy` with its own exit code and a one-line message on stderr.
@Suite(.timeLimit(.minutes(3)))
struct ErrorTests {
    @Test func anUnreachableServerExitsWith69() async throws {
        let environment = ["CANOPY_DATABASE_URL": "http://127.0.0.1:1?ns=test"]
        // An import asks whether the server is there while it checks the file: the answer stops the check.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("unreachable-\(UUID()).json")
        try Data(#"{"a": 1}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for arguments in [
            ["get", "a"], ["set", "a", "1"], ["export", "a"], ["listen", "a", "--timeout", "2"],
            ["import", "a", file.path],
        ] {
            let result = try await CLIProcess.run(arguments, environment: environment)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("canopy: server unreachable"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        }
    }

    /// `listen` and `server-time` go through the SDK, which keeps trying to connect: nothing
    /// listening is said at once, as for the other commands, not after --timeout.
    @Test func aRealtimeCommandSaysAtOnceThatNothingListens() async throws {
        let port = try TestServer.reservePort()
        let environment = ["CANOPY_DATABASE_URL": "http://127.0.0.1:\(port)?ns=test"]
        for arguments in [["listen", "a"], ["server-time"]] {
            let result = try await CLIProcess.run(arguments, environment: environment)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr
                    == "canopy: server unreachable: http://127.0.0.1:\(port) refused the connection (is canopy-server "
                    + "running?)\n", "\(arguments): \(result.stderr)")
        }
    }

    @Test func invalidInputExitsWith65() async throws {
        try await withTestServer { server in
            let json = try await server.canopy("set", "a", #"{"name": }"#)
            #expect(json.status == 65)
            #expect(json.stderr.contains("not valid JSON"), "\(json.stderr)")

            let bareWord = try await server.canopy("set", "a", "Ada")
            #expect(bareWord.status == 65)
            #expect(bareWord.stderr.contains(#"'"Ada"'"#), "suggests quoting: \(bareWord.stderr)")

            let path = try await server.canopy("get", "users/a.b")
            #expect(path.status == 65)
            #expect(path.stderr.contains(#"key "a.b" contains '.'"#), "\(path.stderr)")

            let key = try await server.canopy("set", "a", #"{"bad#key": 1}"#)
            #expect(key.status == 65, "the server refuses the key: \(key.stderr)")
            #expect(key.stderr.contains("bad#key"), "\(key.stderr)")

            let update = try await server.canopy("update", "a", "[1, 2]")
            #expect(update.status == 65)

            let info = try await server.canopy("set", ".info/connected", "true")
            #expect(info.status == 65)
        }
    }

    @Test func otherFailuresHaveTheirOwnCodes() async throws {
        try await withTestServer { server in
            let missing = try await server.canopy("set", "a", "@/nonexistent/value.json")
            #expect(missing.status == 66, "\(missing.stderr)")
            #expect(missing.stderr.contains("/nonexistent/value.json"))

            let usage = try await server.canopy("get", "a", "--start-at", "3")
            #expect(usage.status == 64, "a range needs an ordering: \(usage.stderr)")
            let notJSONBound = try await server.canopy("get", "a", "--order-by-child", "x", "--equal-to", "ada")
            #expect(notJSONBound.status == 64)
            #expect(notJSONBound.stderr.contains(#"'"ada"'"#), "\(notJSONBound.stderr)")
        }
        try await withTestServer(configure: { $0.createsNamespaces = false }) { server in
            let unknown = try await server.canopy("get", "a", "--url", server.baseURL + "?ns=nowhere")
            #expect(unknown.status == 68, "an unknown namespace is not found: \(unknown.stderr)")
            #expect(unknown.stderr.hasPrefix("canopy: not found"))
        }
    }
}
