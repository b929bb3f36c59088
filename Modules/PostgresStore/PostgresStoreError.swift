/// What went wrong with the PostgreSQL store as a whole, and where: its address, its schema, this
/// process's membership of the cluster and the namespaces it takes. What fails in an open
/// namespace is a ``Persistence/StoreError``, as in every ``ServerStorage/ServerStore``.
///
/// ```swift
/// do {
///     try await storage.prepare()
/// } catch {
///     print(error)   // cannot reach PostgreSQL at "postgres://canopy@db:5432/canopy": connection refused
/// }
/// ```
public enum PostgresStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `--store` address is not a PostgreSQL URL the store understands.
    case invalidURL(String, reason: String)
    /// PostgreSQL could not be reached, or refused the credentials.
    case cannotConnect(url: String, reason: String)
    /// The database holds migrations this build does not know: a newer Canopy wrote it.
    case newerSchema(applied: [String], known: [String])
    /// Namespace `namespace` is served by `node` (reached at `host`, when it advertises one), whose
    /// lease has not run out.
    case ownedElsewhere(namespace: String, node: String, host: String?)
    /// A running process already has node name `node`.
    case nodeInUse(String)
    /// Node `node`, running, already advertises host `host`.
    case hostInUse(String, node: String)
    /// A statement failed; the transaction holding it changed nothing.
    case query(operation: String, message: String)
    /// PostgreSQL did not answer within `after` (unreachable, or every pooled connection busy). A
    /// write may still have committed.
    case timedOut(operation: String, after: Duration)

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason):
            "invalid PostgreSQL URL \"\(url)\": \(reason)"
        case .cannotConnect(let url, let reason):
            "cannot reach PostgreSQL at \"\(url)\": \(reason)"
        case .newerSchema(let applied, let known):
            "the database was migrated by a newer Canopy (it has \(applied.joined(separator: ", ")); "
                + "this build knows \(known.joined(separator: ", "))"
        case .ownedElsewhere(let namespace, let node, _):
            "namespace \"\(namespace)\" is served by \(node)"
        case .nodeInUse(let node):
            "another running canopy-server has node name \"\(node)\" (give each its own --node-name)"
        case .hostInUse(let host, let node):
            "node \"\(node)\", running, already advertises host \"\(host)\" (give each its own --advertise-host)"
        case .query(let operation, let message):
            "PostgreSQL failed \(operation): \(message)"
        case .timedOut(let operation, let after):
            "PostgreSQL did not answer within \(after) (\(operation))"
        }
    }
}
