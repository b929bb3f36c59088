import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// Runs `body` with a fresh server and `count` connected clients; closes them and stops the server.
func withClients(
    _ count: Int, namespace: String = "test", configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (TestServer, [RealtimeTestClient]) async throws -> Void
) async throws {
    try await withTestServer(configure: configure) { server in
        var clients: [RealtimeTestClient] = []
        do {
            for _ in 0..<count {
                clients.append(try await RealtimeTestClient.connect(to: server, namespace: namespace))
            }
            try await body(server, clients)
        } catch {
            for client in clients { await client.close() }
            throw error
        }
        for client in clients { await client.close() }
    }
}

/// The `canopy-server` built next to the tests, if any (suites that run the real binary are
/// skipped without it).
let serverExecutable = ServerProcess.locateExecutable()

/// Parses JSON text written in a test.
func json(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

extension ServerMessage {
    /// The parts of a `d` push, or `nil`.
    var overwrite: (path: String, data: JSONValue, tag: Int?)? {
        if case .overwrite(let path, let data, let tag) = self { return (path, data, tag) }
        return nil
    }

    /// The parts of an `m` push, or `nil`.
    var merge: (path: String, data: JSONValue, tag: Int?)? {
        if case .merge(let path, let data, let tag) = self { return (path, data, tag) }
        return nil
    }

    /// Whether this is control `e`.
    var isError: Bool {
        if case .error = self { return true }
        return false
    }

    /// The request number of a response, or `nil`.
    var responseNumber: Int? {
        if case .response(let number, _, _) = self { return number }
        return nil
    }
}

extension RealtimeTestClient {
    /// Listens at `path` (optionally with a query object and tag), checks that the data comes
    /// before `ok`, and returns the initial data push.
    @discardableResult
    func listen(_ path: String, query: JSONValue? = nil, tag: Int? = nil) async throws -> ServerMessage {
        let number = try await send(.listen(path: path, query: query, tag: tag, hash: nil))
        let data = try await next { $0.isDataPush || $0.responseNumber == number }
        #expect(data.isDataPush, "listen at \(path) answered before sending its data: \(data)")
        let answer = try await response(to: number)
        #expect(answer.status == .ok, "listen at \(path): \(answer)")
        return data
    }
}

/// Milliseconds since 1970 on this machine's clock.
func nowMilliseconds() -> Double {
    Date().timeIntervalSince1970 * 1000
}
