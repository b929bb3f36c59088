public import Persistence
import Synchronization
public import Tree

/// A ``ServerStore`` that keeps everything in memory: for tests and servers started with
/// `--in-memory`. It accepts and rejects the same writes as ``SQLiteServerStore`` and yields the
/// same trees, but nothing outlives the instance.
///
/// ```swift
/// let store = InMemoryServerStore()
/// try store.commit([StoredWrite(path: "a/b", node: Node(.bool(true)))])
/// try store.loadTree()   // {"a":{"b":true}}
/// ```
///
/// A commit costs O(size of the written nodes) to validate plus O(d log c) per write to apply, in
/// place (nothing is copied once the nodes on a write's path are the store's alone);
/// ``loadTree()`` is O(1).
public final class InMemoryServerStore: ServerStore {
    private struct State {
        var tree: Node
        var settings: [String: JSONValue]
        var writeIDs: [String: StoredWriteIDs] = [:]
    }

    private let state: Mutex<State>

    /// A store holding `tree` and `settings`.
    public init(tree: Node = .empty, settings: [String: JSONValue] = [:]) {
        state = Mutex(State(tree: tree, settings: settings))
    }

    public func loadTree() -> Node {
        state.withLock { $0.tree }
    }

    /// Applies `writes` in order, all or none; throws ``StoreError/invalidWrite(path:reason:)``
    /// (changing nothing) for a key that ``SQLiteServerStore`` could not hold either.
    public func commit(_ writes: [StoredWrite]) throws(StoreError) {
        try commit(writes, disconnects: [], writeIDs: [])
    }

    /// Applies `writes` and `writeIDs` all or none; there are no onDisconnect operations to keep.
    public func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        for write in writes { try write.validate() }
        state.withLock { state in
            // In place: a copy of the tree here would share every node with the stored one, and
            // each write would then copy its whole path (a second tree update per write, beside
            // the database's own).
            for write in writes { state.tree.update(at: write.path, to: write.node) }
            for change in writeIDs {
                switch change {
                case .store(let ids): state.writeIDs[ids.client] = ids
                case .forget(let client): state.writeIDs[client] = nil
                }
            }
        }
    }

    public func storedWriteIDs() -> [StoredWriteIDs] {
        state.withLock { $0.writeIDs.values.sorted { ($0.seen, $0.client) < ($1.seen, $1.client) } }
    }

    public func setting(_ name: String) -> JSONValue? {
        state.withLock { $0.settings[name] }
    }

    public func setSetting(_ name: String, _ value: JSONValue?) {
        state.withLock { $0.settings[name] = value }
    }
}
