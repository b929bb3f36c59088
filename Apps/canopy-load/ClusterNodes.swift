import Foundation

/// canopy-server processes sharing one PostgreSQL database, on consecutive ports, each
/// advertising its own loopback address.
enum ClusterNodes {
    /// Starts `count` nodes named `<prefix>-node1`, … on ports `firstPort`, `firstPort + 1`, …,
    /// with their data folders under a new temporary folder, and says so on `console` (with `note`
    /// after). `binary` defaults to the canopy-server beside canopy-load, then on PATH.
    static func start(
        count: Int, binary: String?, store: String, firstPort: Int, leaseSeconds: Double, prefix: String,
        console: Console, note: String = ""
    ) async throws -> LaunchedServers {
        let binary =
            try binary
            ?? ChildProcess.locate("canopy-server", preferring: [ChildProcess.ownFolder].compactMap { $0 })
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-\(prefix)-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        var nodes: [LaunchedServer] = []
        for index in 0..<count {
            let port = firstPort + index
            let folder = (root as NSString).appendingPathComponent("node\(index + 1)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let node = LaunchedServer(
                binary: binary, host: "127.0.0.1", port: port, folder: folder, removeFolder: true, inMemory: false,
                extraArguments: [
                    "--store", store, "--node-name", "\(prefix)-node\(index + 1)", "--advertise-host",
                    "127.0.0.1:\(port)", "--lease-duration", String(leaseSeconds),
                ])
            do {
                try await node.start()
            } catch {
                await LaunchedServers(nodes, folder: root).shutDown()
                throw error
            }
            nodes.append(node)
        }
        console.line("started \(count) nodes on ports \(firstPort)–\(firstPort + count - 1) over \(store)" + note)
        return LaunchedServers(nodes, folder: root)
    }
}
