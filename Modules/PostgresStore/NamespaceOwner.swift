/// The process that serves a namespace, as the lease table (`canopy_owner`) records it: its node
/// name, the host it advertises to clients, and the epoch it took the namespace under, raised at
/// every takeover.
///
/// ```swift
/// let owner = try await PostgresStorage.owner(of: "main", at: try PostgresLocation(url), logger: logger)
/// print(owner?.node, owner?.epoch)   // nil: no process took the namespace yet
/// ```
public struct NamespaceOwner: Sendable, Equatable {
    public var node: String
    public var host: String?
    public var epoch: Int64

    public init(node: String, host: String?, epoch: Int64) {
        self.node = node
        self.host = host
        self.epoch = epoch
    }
}
