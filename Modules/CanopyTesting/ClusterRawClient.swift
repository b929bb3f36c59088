import Synchronization
import Transport
public import Tree

/// A raw realtime-protocol client of a cluster, watched by a ``ClusterPromiseChecker``: it
/// connects to the nodes in turn, follows the redirect `r` to the namespace's owner, registers
/// `disconnects/<name>` += 1 as onDisconnect right after each hello, listens to the whole
/// namespace, and connects again whenever its connection ends, from ``start()`` to ``stop()``.
///
/// ```swift
/// let raw = ClusterRawClient(name: "raw", urls: [nodes.webSocketURL(of: 0, namespace: "demo")], namespace: "demo")
/// raw.start()
/// ```
public final class ClusterRawClient: ObservedClient {
    private struct State {
        var view = JSONValue.null
        var connection: RealtimeTestClient?
        var task: Task<Void, Never>?
    }

    public let name: String
    public let ledger = ConnectionLedger()
    private let urls: [String]
    private let namespace: String
    private let state = Mutex(State())

    /// A client named `name` of `namespace`, reaching the cluster at `urls` (realtime URLs).
    public init(name: String, urls: [String], namespace: String) {
        self.name = name
        self.urls = urls
        self.namespace = namespace
    }

    public var view: JSONValue { state.withLock { $0.view } }

    public func start() {
        let task = Task { await run() }
        state.withLock { $0.task = task }
    }

    public func stop() async {
        let (task, connection) = state.withLock { ($0.task, $0.connection) }
        task?.cancel()
        await connection?.close()
        await task?.value
    }

    /// Sends a write of 1 at `path` on the current connection without waiting; the task gets its
    /// answer (within 90 s).
    public func sendLate(_ path: String) async throws -> Task<RealtimeTestClient.Response, any Error> {
        guard let connection = state.withLock({ $0.connection }) else { throw RealtimeTestError.notConnected }
        let number = try await connection.send(.put(path: path, data: 1, hash: nil))
        return Task { try await connection.response(to: number, timeout: .seconds(90)) }
    }

    private func run() async {
        var index = 0
        var target = urls[0]
        while !Task.isCancelled {
            let connection: RealtimeTestClient
            do {
                connection = try await RealtimeTestClient.connect(url: target, timeout: .seconds(10))
            } catch {
                if case RealtimeTestError.noHello(.reset(let host)?, _, _, _) = error {
                    target = "ws://\(host)/.ws?v=5&ns=\(namespace)"
                } else {
                    index = (index + 1) % urls.count
                    target = urls[index]
                }
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            await serve(connection)
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func serve(_ connection: RealtimeTestClient) async {
        state.withLock { $0.connection = connection }
        ledger.opened()
        var answered = false
        do {
            let answer = try await connection.request(
                .onDisconnectMerge(path: "disconnects", data: [name: [".sv": ["increment": 1]]]),
                timeout: .seconds(60))
            answered = true
            ledger.registered(answer.isOK)
            try await connection.send(.listen(path: "", query: nil, tag: nil, hash: nil))
            while !Task.isCancelled {
                if let push = await connection.pushIfAny(within: .seconds(1)) {
                    apply(push)
                } else if connection.isClosed {
                    break
                }
            }
        } catch {
            // The connection ended (or the registration got no answer in time).
        }
        if !Task.isCancelled { ledger.ended(unanswered: !answered) }
        state.withLock { $0.connection = nil }
        await connection.close()
    }

    private func apply(_ push: ServerMessage) {
        state.withLock { state in
            switch push {
            case .overwrite(let path, let data, _):
                state.view = state.view.setting(data, at: path)
            case .merge(let path, .object(let members), _):
                for (key, value) in members {
                    state.view = state.view.setting(value, at: path.isEmpty ? key : path + "/" + key)
                }
            default:
                break
            }
        }
    }
}
