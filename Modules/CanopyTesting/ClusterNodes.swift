import Synchronization

/// Several real `canopy-server` processes forming one cluster over a ``PostgresTestCluster``, for
/// fault tests: each node keeps its port and data folder across restarts, and runs in a
/// ``NetworkNamespace`` of its own when `networks` are given (so that any one can be cut off),
/// else on the loopback. Nodes are named `node1`, `node2`, … in order.
///
/// ```swift
/// let nodes = try await ClusterNodes.start(store: cluster, leaseSeconds: 2, folder: folder)
/// await nodes.kill("node1")
/// try await nodes.restart("node1")
/// await nodes.stop()
/// ```
public final class ClusterNodes: Sendable {
    private struct Spec: Sendable {
        let name: String
        let port: Int
        let network: NetworkNamespace?
        var host: String { network?.address ?? "127.0.0.1" }
    }

    private let specs: [Spec]
    private let processes: Mutex<[String: ServerProcess]>
    private let store: PostgresTestCluster
    private let folder: String
    private let leaseSeconds: Int

    private init(specs: [Spec], store: PostgresTestCluster, folder: String, leaseSeconds: Int) {
        self.specs = specs
        self.store = store
        self.folder = folder
        self.leaseSeconds = leaseSeconds
        processes = Mutex([:])
    }

    /// Starts `count` nodes (one per network when `networks` are given) with leases of
    /// `leaseSeconds`, their data in `folder`; stops those started if one fails to start.
    public static func start(
        count: Int = 3, store: PostgresTestCluster, leaseSeconds: Int, networks: [NetworkNamespace] = [],
        folder: String
    ) async throws -> ClusterNodes {
        var specs: [Spec] = []
        for index in 0..<(networks.isEmpty ? count : networks.count) {
            specs.append(
                Spec(
                    name: "node\(index + 1)", port: try TestServer.reservePort(),
                    network: networks.isEmpty ? nil : networks[index]))
        }
        let nodes = ClusterNodes(specs: specs, store: store, folder: folder, leaseSeconds: leaseSeconds)
        do {
            for spec in specs { try await nodes.restart(spec.name) }
        } catch {
            await nodes.stop()
            throw error
        }
        return nodes
    }

    /// Whether the nodes run in network namespaces of their own (and can be ``cut(_:)``).
    public var hasNetworks: Bool { specs.first?.network != nil }

    /// Each node's `http://HOST:PORT`, in order.
    public var baseURLs: [String] { specs.map { "http://\($0.host):\($0.port)" } }

    /// The name of node `index` (from 0).
    public func name(of index: Int) -> String { specs[index].name }

    /// The SDK's URL of `namespace` on node `index`.
    public func databaseURL(of index: Int, namespace: String) -> String {
        "http://\(specs[index].host):\(specs[index].port)?ns=\(namespace)"
    }

    /// The realtime URL of `namespace` on node `index`.
    public func webSocketURL(of index: Int, namespace: String) -> String {
        "ws://\(specs[index].host):\(specs[index].port)/.ws?v=5&ns=\(namespace)"
    }

    /// Everything node `name`'s current process logged.
    public func log(of name: String) -> String { process(name)?.log ?? "" }

    /// The end of every node's log, for a failure's message.
    public func logs() -> String {
        specs.map { "\($0.name):\n\(log(of: $0.name).suffix(3000))" }.joined(separator: "\n")
    }

    private func process(_ name: String) -> ServerProcess? { processes.withLock { $0[name] } }

    private func spec(_ name: String) throws -> Spec {
        guard let spec = specs.first(where: { $0.name == name }) else {
            throw ClusterTestError.unexpected("no node named \"\(name)\"")
        }
        return spec
    }

    /// Starts node `name` (again), on its port, over the same data folder.
    public func restart(_ name: String) async throws {
        let spec = try spec(name)
        let process = try await ServerProcess.startClusterNode(
            spec.name, store: store, leaseSeconds: leaseSeconds, folder: folder, port: spec.port,
            network: spec.network)
        processes.withLock { $0[name] = process }
    }

    /// Kills node `name` with SIGKILL.
    public func kill(_ name: String) async { await process(name)?.kill() }

    /// Stops node `name` with SIGSTOP (see ``ServerProcess/pause()``).
    public func pause(_ name: String) async { await process(name)?.pause() }

    /// Lets a paused node go on.
    public func resume(_ name: String) { process(name)?.resume() }

    /// Cuts node `name` off PostgreSQL and its clients (see ``NetworkNamespace/cut()``).
    public func cut(_ name: String) async throws { try await spec(name).network?.cut() }

    /// Brings a cut node's link back.
    public func heal(_ name: String) async throws { try await spec(name).network?.heal() }

    /// Stops every node (a paused one is let go on first).
    public func stop() async {
        for process in processes.withLock({ Array($0.values) }) {
            process.resume()
            await process.terminate()
        }
    }
}
