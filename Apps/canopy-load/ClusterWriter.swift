import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One REST writer over the cluster's nodes: puts `w<n>` one after another, following 307s to the
/// owner and moving to the next node when one does not answer.
final class ClusterWriter: Sendable {
    private let ports: [Int]
    private let namespace: String
    private let requestTimeout: Duration
    private let client: HTTPClient
    private let state = Mutex(State())
    private let writing = Mutex<Task<Void, Never>?>(nil)

    private struct State {
        var current = 0
        var acknowledged: [Int] = []
        var lastAcknowledgement: UInt64 = 0
        var lastAcknowledgingPort = 0
    }

    /// Writes to `namespace` through the nodes at `ports` while `body` runs: from before it starts
    /// until it ended (whether or not it threw), or until it calls ``stopWriting()`` to check what
    /// was acknowledged. A node that has not answered a write within `requestTimeout` (a paused
    /// one) is left for the next.
    static func writing<Result>(
        to ports: [Int], namespace: String = "takeover", requestTimeout: Duration = .seconds(10),
        _ body: (ClusterWriter) async throws -> Result
    ) async throws -> Result {
        let writer = ClusterWriter(ports: ports, namespace: namespace, requestTimeout: requestTimeout)
        writer.writing.withLock { $0 = Task { await writer.run() } }
        do {
            let result = try await body(writer)
            await writer.shutdown()
            return result
        } catch {
            await writer.shutdown()
            throw error
        }
    }

    private init(ports: [Int], namespace: String, requestTimeout: Duration) {
        self.ports = ports
        self.namespace = namespace
        self.requestTimeout = requestTimeout
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .milliseconds(250)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    var acknowledged: Int { state.withLock { $0.acknowledged.count } }
    var lastAcknowledgement: UInt64 { state.withLock { $0.lastAcknowledgement } }
    var lastAcknowledgingPort: Int { state.withLock { $0.lastAcknowledgingPort } }

    /// Stops writing, and returns once the last write ended.
    func stopWriting() async {
        guard let task = writing.withLock({ $0.take() }) else { return }
        task.cancel()
        await task.value
    }

    private func run() async {
        var sequence = 0
        while !Task.isCancelled {
            if await put(sequence) {
                let now = monotonicNanoseconds()
                let port = ports[state.withLock { $0.current }]
                state.withLock { state in
                    state.acknowledged.append(sequence)
                    state.lastAcknowledgement = now
                    state.lastAcknowledgingPort = port
                }
            }
            sequence += 1
        }
    }

    /// Whether a node acknowledged write `sequence` (after redirects and moves).
    private func put(_ sequence: Int) async -> Bool {
        for _ in 0..<1000 where !Task.isCancelled {
            let port = ports[state.withLock { $0.current }]
            var request = HTTPClientRequest(
                url: "http://127.0.0.1:\(port)/w\(sequence).json?ns=\(namespace)&print=silent")
            request.method = .PUT
            request.body = .bytes(ByteBuffer(string: "\(sequence)"))
            do {
                let response = try await client.execute(request, timeout: .init(requestTimeout))
                _ = try? await response.body.collect(upTo: 1 << 16)
                switch response.status.code {
                case 200..<300:
                    return true
                case 307:
                    let location = response.headers.first(name: "Location").flatMap(URLComponents.init(string:))
                    if let owner = location?.port, let index = ports.firstIndex(of: owner) {
                        state.withLock { $0.current = index }
                    }
                case 503:
                    try? await Task.sleep(for: .milliseconds(5))
                default:
                    return false
                }
            } catch {
                state.withLock { $0.current = ($0.current + 1) % ports.count }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        return false
    }

    /// Waits until `condition` holds for the count of acknowledged writes.
    func waitUntil(timeout: Duration, _ condition: (Int) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(acknowledged) {
            guard ContinuousClock.now < deadline else {
                throw LoadError.check("no write was acknowledged for \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// How many acknowledged writes the namespace lacks, read through the owner.
    func missing() async throws -> Int {
        let stored = try await read("") as? [String: Any] ?? [:]
        return state.withLock { $0.acknowledged }.count { stored["w\($0)"] == nil }
    }

    /// The writes acknowledged so far, in order.
    var acknowledgedSequence: [Int] { state.withLock { $0.acknowledged } }

    /// The value at `path` (`""`: the namespace), read through the owner, as JSONSerialization
    /// gives it (`nil` for no data).
    func read(_ path: String) async throws -> Any? {
        var port = ports[state.withLock { $0.current }]
        for _ in 0..<10 {
            let response = try await client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(path).json?ns=\(namespace)"), timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 30)
            if response.status.code == 307,
                let owner = response.headers.first(name: "Location").flatMap(URLComponents.init(string:))?.port
            {
                port = owner
                continue
            }
            guard response.status.code == 200 else {
                throw LoadError.check("reading /\(path) back answered \(response.status.code)")
            }
            let value = try JSONSerialization.jsonObject(
                with: Data(String(buffer: body).utf8), options: .fragmentsAllowed)
            return value is NSNull ? nil : value
        }
        throw LoadError.check("reading /\(path) back was redirected too often")
    }

    private func shutdown() async {
        await stopWriting()
        try? await client.shutdown()
    }
}
