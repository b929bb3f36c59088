import Synchronization
public import Tree

/// Numbered REST writes (`log/w<n>` = n) into one namespace of a cluster, one after another from
/// ``start()`` to ``stop()``, through a ``ClusterRESTClient``: it records every write a node
/// acknowledged, for a test to find them all in PostgreSQL and in every client's view afterwards.
///
/// ```swift
/// let writer = NumberedWriter(rest: ClusterRESTClient(nodes: nodes.baseURLs), namespace: "demo")
/// writer.start()
/// try await waitUntil("twenty writes") { writer.count >= 20 }
/// await writer.stop()
/// ```
public final class NumberedWriter: Sendable {
    private struct State {
        var next = 0
        var countAtStart = 0
        var acknowledged: [String: JSONValue] = [:]
        var numbered = 0
        var task: Task<Void, Never>?
    }

    private let rest: ClusterRESTClient
    private let namespace: String
    private let state = Mutex(State())

    public init(rest: ClusterRESTClient, namespace: String) {
        self.rest = rest
        self.namespace = namespace
    }

    /// Numbered writes acknowledged so far.
    public var count: Int { state.withLock { $0.numbered } }

    /// ``count`` when the writer last started.
    public var countAtStart: Int { state.withLock { $0.countAtStart } }

    /// Every acknowledged write: path to value.
    public var acknowledged: [String: JSONValue] { state.withLock { $0.acknowledged } }

    /// Records a write acknowledged by other means.
    public func acknowledge(_ path: String, _ value: JSONValue) {
        state.withLock { $0.acknowledged[path] = value }
    }

    /// Starts writing, from the number after the last one sent.
    public func start() {
        let task = Task { [self] in
            while !Task.isCancelled {
                let index = state.withLock { state in
                    defer { state.next += 1 }
                    return state.next
                }
                let path = "log/w\(index)"
                guard let done = try? await rest.put("/\(path).json?ns=\(namespace)", body: "\(index)") else {
                    continue
                }
                if done {
                    state.withLock { state in
                        state.acknowledged[path] = .number(Double(index))
                        state.numbered += 1
                    }
                }
            }
        }
        state.withLock { state in
            state.countAtStart = state.numbered
            state.task = task
        }
    }

    /// Stops writing and waits for the write in flight to end (its outcome then unknown unless
    /// acknowledged).
    public func stop() async {
        let task = state.withLock { state in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }
}
