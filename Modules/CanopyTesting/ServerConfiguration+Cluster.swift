public import CanopyServer

extension ServerConfiguration {
    /// Makes this an in-process cluster node named `node` keeping its namespaces in `cluster`, with
    /// leases of `leaseDuration`; with `port`, listening there and advertising `advertisedHost:port`
    /// (where redirected clients and proxied requests reach it).
    ///
    /// ```swift
    /// try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1", port: port) }) { node1 in … }
    /// ```
    public mutating func joinCluster(
        _ cluster: PostgresTestCluster, node: String, port: Int? = nil, advertisedHost: String = "127.0.0.1",
        leaseDuration: Duration = .seconds(5)
    ) {
        postgresURL = cluster.url
        nodeName = node
        self.leaseDuration = leaseDuration
        if let port {
            self.port = port
            advertiseHost = "\(advertisedHost):\(port)"
        }
    }
}
