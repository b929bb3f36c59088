import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy listen` (through the SDK's realtime connection) sees writes made over REST.
@Suite(.timeLimit(.minutes(3)))
struct ListenTests {
    @Test func listenPrintsEachChildEventUntilInterrupted() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/room.json?ns=test", body: #"{"ada": {"text": "hi"}}"#)
            let listen = try CLIProcess(["listen", "room"], environment: server.cliEnvironment)
            #expect(await listen.waitForLines { $0.count >= 1 }, "no initial event; stderr: \(listen.stderr)")

            _ = try await server.http(.PUT, "/room/grace.json?ns=test", body: #"{"text": "hello"}"#)
            #expect(await listen.waitForLines { $0.count >= 2 })
            _ = try await server.http(.PATCH, "/room.json?ns=test", body: #"{"ada/text": "bye"}"#)
            #expect(await listen.waitForLines { $0.count >= 3 })
            _ = try await server.http(.DELETE, "/room/grace.json?ns=test")
            #expect(await listen.waitForLines { $0.count >= 4 })

            listen.send(SIGINT)
            try await listen.waitForExit(timeout: .seconds(30))
            #expect(listen.status == 0, "Ctrl-C ends a listen normally: \(listen.stderr)")
            let events = try listen.lines.map { try JSONValue(parsing: $0) }
            #expect(
                events == [
                    ["event": "child_added", "key": "ada", "value": ["text": "hi"]],
                    ["event": "child_added", "key": "grace", "previous": "ada", "value": ["text": "hello"]],
                    ["event": "child_changed", "key": "ada", "value": ["text": "bye"]],
                    ["event": "child_removed", "key": "grace", "value": ["text": "hello"]],
                ], "\(listen.lines)")
        }
    }

    @Test func listenWithAQueryAndValueEvents() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/scores.json?ns=test", body: #"{"a": 3, "b": 1, "c": 2}"#)
            let listen = try CLIProcess(
                ["listen", "scores", "--event", "value", "--order-by-value", "--limit-to-last", "2"],
                environment: server.cliEnvironment)
            #expect(await listen.waitForLines { $0.count >= 1 }, "stderr: \(listen.stderr)")
            _ = try await server.http(.PUT, "/scores/d.json?ns=test", body: "10")
            #expect(await listen.waitForLines { $0.count >= 2 })
            listen.send(SIGTERM)
            try await listen.waitForExit(timeout: .seconds(30))
            #expect(listen.status == 0)
            let values = try listen.lines.map { try JSONValue(parsing: $0)["value"] }
            #expect(values == [["a": 3, "c": 2], ["a": 3, "d": 10]], "\(listen.lines)")
        }
    }
}
