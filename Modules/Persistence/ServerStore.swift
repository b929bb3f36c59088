public import Tree

/// Durable storage of one database (namespace): its tree and a few named settings.
///
/// The server reads the whole tree once at startup with ``loadTree()``, keeps it in memory, and
/// hands every acknowledged change to ``commit(_:)`` (usually through a ``CommitQueue``, which
/// groups them). ``SQLiteServerStore`` keeps the data in a file; ``InMemoryServerStore`` keeps it in
/// memory for tests and `--in-memory` servers. Both behave alike for the same sequence of calls.
///
/// ```swift
/// let store = try SQLiteServerStore(path: "data/main.sqlite")
/// var tree = try store.loadTree()
/// let write = StoredWrite(path: "users/ada", node: try Node(json: ["age": 36]))
/// try store.commit([write])
/// tree = tree.updating(at: write.path, to: write.node)
/// ```
///
/// Calls are thread-safe; implementations serialize them.
public protocol ServerStore: Sendable {
    /// The whole stored tree. O(size): meant for startup.
    func loadTree() throws -> Node

    /// Applies `writes` in order, all or none, in one transaction. When it returns the writes are
    /// as durable as the store's ``Durability`` promises; when it throws nothing changed.
    func commit(_ writes: [StoredWrite]) throws

    /// The settings document `name` (for example `"rules"`), or `nil` when none is stored.
    func setting(_ name: String) throws -> JSONValue?

    /// Stores the settings document `name`; `nil` removes it.
    func setSetting(_ name: String, _ value: JSONValue?) throws

    /// Releases what the store holds (files, descriptors); later calls fail. Stores holding nothing
    /// outside memory need not implement it.
    func close() throws
}

extension ServerStore {
    public func close() throws {}
}
