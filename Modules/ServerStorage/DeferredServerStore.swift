public import Persistence
import Synchronization
public import Tree

/// A ``ServerStore`` that does not exist until something is written: it reads as empty (no tree,
/// no settings) and opens its backing store, with `create`, on the first ``commit(_:)`` or
/// ``setSetting(_:_:)``.
///
/// A server opens namespaces nobody wrote to through it, so that reading or listening to a name
/// creates no file and holds no descriptor:
/// ```swift
/// let store = DeferredServerStore { try SQLiteServerStore(path: "data/\(name).sqlite") }
/// try store.loadTree()                              // empty; no file yet
/// try store.commit([StoredWrite(path: "a", node: Node(.number(1)))])   // creates the file
/// ```
///
/// Until then it reads as holding `initialSettings`, which are stored when it is created (a
/// server's startup rules, so that a namespace created under them keeps them). A `create` that
/// fails fails the write that needed it, and the next write tries again.
public final class DeferredServerStore: ServerStore {
    private let create: @Sendable () throws(StoreError) -> any ServerStore
    private let initialSettings: [String: JSONValue]
    private let store = Mutex<(any ServerStore)?>(nil)

    public let keepsDisconnectOperations: Bool

    /// A store that calls `create` when first written to, and then stores `initialSettings` in it.
    /// `keepsDisconnectOperations` tells whether the store `create` makes keeps them (storing
    /// some creates it too).
    public init(
        initialSettings: [String: JSONValue] = [:], keepsDisconnectOperations: Bool = false,
        create: @escaping @Sendable () throws(StoreError) -> any ServerStore
    ) {
        self.initialSettings = initialSettings
        self.keepsDisconnectOperations = keepsDisconnectOperations
        self.create = create
    }

    /// Whether the backing store was created (something was written).
    public var isCreated: Bool { store.withLock { $0 != nil } }

    public func loadTree() throws(StoreError) -> Node {
        try store.withLock { store throws(StoreError) in try store?.loadTree() } ?? .empty
    }

    /// Commits `writes`, creating the backing store first; an empty commit (a barrier some callers
    /// use to order reads after writes) creates nothing.
    public func commit(_ writes: [StoredWrite]) throws(StoreError) {
        if writes.isEmpty, !isCreated { return }
        try created().commit(writes)
    }

    public func commit(_ writes: [StoredWrite], disconnects: [DisconnectChange]) throws(StoreError) {
        guard keepsDisconnectOperations, !disconnects.isEmpty else { return try commit(writes) }
        try created().commit(writes, disconnects: disconnects)
    }

    /// Creates the backing store only for writes or onDisconnect operations: the write ids of
    /// writes that stored nothing (refusals) are left out until then. Those of a later write that
    /// creates it hold them again, since each records all a client's recent writes.
    public func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        let storesSomething = !writes.isEmpty || (keepsDisconnectOperations && !disconnects.isEmpty)
        guard storesSomething || isCreated else { return }
        try created().commit(writes, disconnects: keepsDisconnectOperations ? disconnects : [], writeIDs: writeIDs)
    }

    /// Nothing before the backing store exists.
    public func storedWriteIDs() throws(StoreError) -> [StoredWriteIDs] {
        try store.withLock { store throws(StoreError) in try store?.storedWriteIDs() } ?? []
    }

    /// Nothing before the backing store exists.
    public func storedDisconnects() throws(StoreError) -> [StoredDisconnect] {
        try store.withLock { store throws(StoreError) in try store?.storedDisconnects() } ?? []
    }

    public func setting(_ name: String) throws(StoreError) -> JSONValue? {
        try store.withLock { store throws(StoreError) in
            guard let store else { return initialSettings[name] }
            return try store.setting(name)
        }
    }

    public func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError) {
        try created().setSetting(name, value)
    }

    public func close() throws(StoreError) {
        try store.withLock { store throws(StoreError) in try store?.close() }
    }

    private func created() throws(StoreError) -> any ServerStore {
        try store.withLock { store throws(StoreError) in
            if let store { return store }
            let created = try create()
            do throws(StoreError) {
                for (name, value) in initialSettings.sorted(by: { $0.key < $1.key }) {
                    try created.setSetting(name, value)
                }
            } catch {
                try? created.close()
                throw error
            }
            store = created
            return created
        }
    }
}
