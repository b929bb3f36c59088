public import Persistence
public import Tree

/// Durable storage of one database (namespace): its tree and a few named settings.
///
/// The server reads the whole tree once at startup with ``loadTree()``, keeps it in memory, and
/// hands every acknowledged change to ``commit(_:)`` (usually through a ``CommitQueue``, which
/// groups them), with the record of the write ids it ran (``commit(_:disconnects:writeIDs:)``,
/// read back at open with ``storedWriteIDs()``). ``SQLiteServerStore`` keeps the data in a file; ``InMemoryServerStore`` keeps it in
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
/// Calls are thread-safe; implementations serialize them. Every call throws a ``StoreError`` that
/// says what failed and where: ``StoreError/sqlite(file:operation:message:)`` and
/// ``StoreError/postgres(namespace:operation:message:)`` for a failed statement (nothing changed),
/// ``StoreError/invalidWrite(path:reason:)`` for a key no store can hold,
/// ``StoreError/corruptData(file:row:reason:)`` for a stored value that does not decode,
/// ``StoreError/fenced(namespace:epoch:)`` when another process took the namespace over (cluster
/// mode; nothing written), and ``StoreError/timedOut(namespace:operation:after:)`` when the store
/// did not answer (a write's outcome unknown).
public protocol ServerStore: Sendable {
    /// The whole stored tree. O(size): meant for startup.
    func loadTree() throws(StoreError) -> Node

    /// Applies `writes` in order, all or none, in one transaction. When it returns the writes are
    /// as durable as the store's ``Durability`` promises; when it throws nothing changed.
    func commit(_ writes: [StoredWrite]) throws(StoreError)

    /// The settings document `name` (for example `"rules"`), or `nil` when none is stored.
    func setting(_ name: String) throws(StoreError) -> JSONValue?

    /// Stores the settings document `name`; `nil` removes it.
    func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError)

    /// Releases what the store holds (files, descriptors); later calls fail. Stores holding nothing
    /// outside memory need not implement it.
    func close() throws(StoreError)

    /// Whether the store keeps connections' onDisconnect operations (``commit(_:disconnects:)``):
    /// a store shared by several processes does, so that the process taking over a namespace runs
    /// the operations of the connections a dead one held. A store of one process does not: when
    /// the process dies its connections' operations die with it, as with one Firebase server.
    var keepsDisconnectOperations: Bool { get }

    /// Applies `writes` and `disconnects` in one transaction, all or none. Stores that do not
    /// keep onDisconnect operations ignore `disconnects`.
    func commit(_ writes: [StoredWrite], disconnects: [DisconnectChange]) throws(StoreError)

    /// The onDisconnect operations stored, oldest session first: at open, those of connections
    /// that no process serves any more.
    func storedDisconnects() throws(StoreError) -> [StoredDisconnect]

    /// Applies `writes`, `disconnects` and `writeIDs` in one transaction, all or none: the record
    /// of how the writes clients named with write ids ended commits with those writes, so that a
    /// resend after a crash is answered from it instead of being applied again.
    func commit(_ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]) throws(StoreError)

    /// The write ids stored, least recently seen client first: read when the namespace opens.
    func storedWriteIDs() throws(StoreError) -> [StoredWriteIDs]
}

extension ServerStore {
    public func close() throws(StoreError) {}

    public var keepsDisconnectOperations: Bool { false }

    public func commit(_ writes: [StoredWrite], disconnects: [DisconnectChange]) throws(StoreError) {
        try commit(writes)
    }

    public func storedDisconnects() throws(StoreError) -> [StoredDisconnect] { [] }

    /// Ignores `writeIDs`: for stores whose data does not outlive the server's memory of them.
    public func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        try commit(writes, disconnects: disconnects)
    }

    public func storedWriteIDs() throws(StoreError) -> [StoredWriteIDs] { [] }
}
