public import Tree

/// A client a ``ClusterPromiseChecker`` watches: its view of the whole namespace and the ledger of
/// its connections. It registers `disconnects/<name>` += 1 as onDisconnect on each connection.
public protocol ObservedClient: Sendable {
    /// Its key under `disconnects`.
    var name: String { get }
    /// What it sees of the whole namespace.
    var view: JSONValue { get }
    var ledger: ConnectionLedger { get }
}
