import CanopyServer
import CanopyTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Canopy

/// A client of `server`'s namespace `test`, independent of every other (its own connection and
/// state, as a separate device would have).
func makeDatabase(_ server: TestServer, namespace: String = "test") -> Database {
    Database(url: "http://127.0.0.1:\(server.port)?ns=\(namespace)", connector: Database.realtimeConnector)
}

/// Collects what callbacks report, for tests to wait on.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func record(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }

    /// Waits until `condition` holds for what was recorded; returns whether it did within `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(30), until condition: ([Value]) -> Bool) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(10)) { condition(self.all) }
    }
}

/// Runs `body` with a fresh in-process server and stops it afterwards.
func withServer(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer) async throws -> Void
) async throws {
    try await withTestServer(configure: configure) { server in try await body(server) }
}
