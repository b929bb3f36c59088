import Query
import SyncEngine
import Tree

/// What a listener with `includeMetadataChanges` was last told, to tell when only metadata changed.
struct DeliveredMetadata: Sendable {
    /// `.value` listeners: the data and metadata of the last event.
    var value: Node?
    var metadata: SnapshotMetadata?
    /// Child listeners: whether the listener was synced, and the pending writes at its query's
    /// location, at the last check (what its children's metadata was then).
    var synced = false
    var pendingWrites = CompoundWrite.empty
}

/// What snapshot metadata depends on: the pending writes and which listeners are synced.
struct MetadataStamp: Equatable, Sendable {
    let pendingWrites: Int
    let lastWriteID: Int
    let syncGeneration: Int
}

extension Repo {
    /// The snapshot `observer` gets of `node`, the data at `path`, with its metadata.
    func snapshot(
        for observer: Observer, ref: DatabaseReference, at path: Path, node: Node, in state: State
    ) -> DataSnapshot {
        let isInfo = path.front == .info
        return DataSnapshot(
            ref: ref, node: node, index: observer.query.params.index, isFromCache: !observer.synced,
            pendingWrites: isInfo ? .empty : state.tree.pendingWrites.visibleWrites.childWrite(at: path))
    }

    /// Whether a listen the server answered on the current connection covers `query`: its own,
    /// or a complete one at or above its location.
    func isSynced(_ query: QuerySpec, in state: State) -> Bool {
        guard reachability(state) == .connected else { return false }
        return state.listens.values.contains { listen in
            listen.answeredOnLink == state.linkNumber && Self.listen(listen.query, covers: query)
        }
    }

    static func listen(_ listen: QuerySpec, covers query: QuerySpec) -> Bool {
        if listen.params.loadsAllData { return listen.path.contains(query.path) }
        return listenKey(listen) == listenKey(query.listenQuery)
    }

    /// The server answered listen `key` (`ok`, or the data at its location, which comes first):
    /// the listeners it covers are synced.
    func listenAnswered(_ key: String, in state: inout State) {
        guard let listen = state.listens[key], listen.answeredOnLink != state.linkNumber else { return }
        state.listens[key]?.answeredOnLink = state.linkNumber
        markSynced(by: listen.query, in: &state)
    }

    /// The listeners `listen` covers are synced (until the connection is lost: a listen covering
    /// them later takes over without a gap).
    func markSynced(by listen: QuerySpec, in state: inout State) {
        for (id, observer) in state.observers where !observer.synced {
            guard observer.query.spec.path.front != .info, Self.listen(listen, covers: observer.query.spec) else {
                continue
            }
            state.observers[id]?.synced = true
            state.syncGeneration += 1
        }
    }

    /// The connection was lost: every listener's data is from the cache again.
    func markUnsynced(in state: inout State) {
        for (id, observer) in state.observers where observer.synced && observer.query.spec.path.front != .info {
            state.observers[id]?.synced = false
        }
        state.syncGeneration += 1
    }

    /// Observer `id`, just added with `includeMetadataChanges`, starts from its children's
    /// metadata now.
    func startTrackingMetadata(of id: Int, in state: inout State) {
        guard let observer = state.observers[id] else { return }
        state.observers[id]?.delivered.synced = observer.synced
        state.observers[id]?.delivered.pendingWrites = state.tree.pendingWrites.visibleWrites.childWrite(
            at: observer.query.spec.path)
    }

    /// Tells the listeners with `includeMetadataChanges` whose metadata changed while their data
    /// did not: a `.value` event with the same data, or a `.childChanged` event for each child
    /// whose metadata changed (except those `toldChildren` got an event for in this batch). Runs
    /// after every batch of events, and does nothing unless a pending write came or went or a
    /// listener's sync changed since the last time.
    func raiseMetadataChanges(toldChildren: [Int: Set<ChildKey>], in state: inout State) {
        guard !state.metadataObservers.isEmpty else { return }
        let writes = state.tree.pendingWrites
        let stamp = MetadataStamp(
            pendingWrites: writes.allWrites.count, lastWriteID: writes.lastWriteID,
            syncGeneration: state.syncGeneration)
        guard stamp != state.metadataStamp else { return }
        state.metadataStamp = stamp
        for id in state.metadataObservers.sorted() {
            guard let observer = state.observers[id] else { continue }
            let spec = observer.query.spec
            let ref = observer.query.ref
            if case .none = observer.callback { continue }
            if observer.registration.responds(to: .value) {
                guard let node = observer.delivered.value else { continue }
                let snapshot = snapshot(for: observer, ref: ref, at: spec.path, node: node, in: state)
                guard snapshot.metadata != observer.delivered.metadata else { continue }
                state.observers[id]?.delivered.metadata = snapshot.metadata
                observer.callback.deliver(snapshot, previousKey: nil, to: state.callbacks)
                continue
            }
            let before = observer.delivered
            let pending = writes.visibleWrites.childWrite(at: spec.path)
            state.observers[id]?.delivered.synced = observer.synced
            state.observers[id]?.delivered.pendingWrites = pending
            guard observer.registration.responds(to: .childChanged), spec.path.front != .info,
                let data = state.tree.eventCache(for: spec)
            else { continue }
            let told = toldChildren[id] ?? []
            let children = Self.children(
                of: data, in: spec.params.index, whoseMetadataMayDiffer: before, pending, observer.synced)
            for child in children where !told.contains(child.name) {
                let relative = Path(keys: [child.name])
                let was = SnapshotMetadata(
                    isFromCache: !before.synced,
                    hasPendingWrites: !before.pendingWrites.childWrite(at: relative).isEmpty)
                let snapshot = snapshot(
                    for: observer, ref: ref.child(child.name.string), at: spec.path.child(child.name),
                    node: child.node, in: state)
                guard snapshot.metadata != was else { continue }
                let previous = data.predecessor(of: child.name, child: child.node, in: spec.params.index)?.string
                observer.callback.deliver(snapshot, previousKey: previous, to: state.callbacks)
            }
        }
    }

    /// The children of `data` whose metadata may differ between `before` and now, in `index`
    /// order: all of them when the sync changed or a write covers the location, else those a
    /// pending write touched.
    private static func children(
        of data: Node, in index: Index, whoseMetadataMayDiffer before: DeliveredMetadata, _ pending: CompoundWrite,
        _ synced: Bool
    ) -> [NamedNode] {
        if before.synced != synced || before.pendingWrites.writes.value != nil || pending.writes.value != nil {
            return Array(data.children(in: index))
        }
        var names: Set<ChildKey> = []
        for (name, _) in before.pendingWrites.writes.children { names.insert(name) }
        for (name, _) in pending.writes.children { names.insert(name) }
        let touched = names.compactMap { name in
            data.hasChild(name) ? NamedNode(name: name, node: data.child(name)) : nil
        }
        return touched.sorted { index.compare($0, $1) < 0 }
    }
}
