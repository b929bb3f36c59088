extension ServerProcess {
    /// Starts `canopy-server` as node `name` of a cluster keeping its namespaces in `store`, with
    /// leases of `leaseSeconds`, on `port` (a free one when `nil`), which it advertises, over the
    /// data folder `folder/name`.
    ///
    /// In `network` it listens on the namespace's address, reaches PostgreSQL over the link (see
    /// ``PostgresTestCluster/listen(on:)``) and is told to create namespaces on writes (off the
    /// loopback they are not by default); elsewhere it runs on the loopback.
    ///
    /// ```swift
    /// let node = try await ServerProcess.startClusterNode("node1", store: cluster, leaseSeconds: 2, folder: folder)
    /// ```
    public static func startClusterNode(
        _ name: String, store: PostgresTestCluster, leaseSeconds: Int, folder: String, port: Int? = nil,
        network: NetworkNamespace? = nil
    ) async throws -> ServerProcess {
        guard let executable = locateExecutable() else { throw ServerProcessError.notBuilt }
        let port = try port ?? TestServer.reservePort()
        let host = network?.address ?? "127.0.0.1"
        var arguments = [
            "--node-name", name, "--port", "\(port)", "--lease-duration", "\(leaseSeconds)",
            "--advertise-host", "\(host):\(port)",
        ]
        guard let network else {
            arguments += ["--store", store.url]
            return try await start(executable: executable, dataDirectory: folder + "/" + name, arguments: arguments)
        }
        arguments += [
            "--store", store.url(host: network.hostAddress), "--host", network.address, "--create-namespaces",
        ]
        return try await start(
            executable: executable, dataDirectory: folder + "/" + name, arguments: arguments,
            launcher: network.launcher, host: network.address)
    }
}
