import Query
public import Tree

/// Told when the sync tree needs the server to start or stop sending data for a query.
public protocol ListenProvider: AnyObject, Sendable {
    /// Start listening to `query`; `tag` identifies a filtered query's updates (`nil` for plain listens).
    func startListening(_ query: QuerySpec, tag: Int?)
    /// Stop listening to `query`.
    func stopListening(_ query: QuerySpec, tag: Int?)
}

/// The client's model of the database: server data for every listened location, the user's
/// pending writes on top, and the events each change raises.
///
/// Every mutating call returns the events listeners must receive, in order. The tree asks its
/// ``ListenProvider`` to start and stop server listens as listeners come and go, sharing one
/// listen between queries where a complete ancestor view already covers them.
///
/// ```swift
/// var tree = SyncTree(listenProvider: connection)
/// let events = tree.addRegistration(EventRegistration(id: 1, types: [.value]), for: QuerySpec(path: "a"))
/// tree.applyUserOverwrite(Node(.number(1)), at: "a", writeID: 0)     // value event, raised at once
/// tree.applyServerOverwrite(Node(.number(1)), at: "a")               // nothing new
/// tree.ackUserWrite(writeID: 0)                                      // confirmed
/// ```
public struct SyncTree: Sendable {
    private var syncPoints = ImmutableTree<SyncPoint>()
    /// The user's writes not yet acknowledged.
    public private(set) var pendingWrites = WriteTree()
    private var tagToQuery: [Int: QueryKey] = [:]
    private var queryToTag: [QueryKey: Int] = [:]
    private var nextTag = 1
    public let listenProvider: any ListenProvider
    /// Data kept from earlier runs (the client's persistence): asked for a query's server data
    /// when no listener in memory holds it. `complete` says the server confirmed that data for the
    /// query; otherwise it is what is known of the query's children.
    public var persistedCache: (@Sendable (QuerySpec) -> (node: Node, complete: Bool))?

    private struct QueryKey: Hashable, Sendable {
        let path: Path
        let viewID: String
    }

    public init(listenProvider: any ListenProvider) {
        self.listenProvider = listenProvider
    }

    // MARK: Writes

    /// A local `set`: raises events at once (when visible).
    public mutating func applyUserOverwrite(_ node: Node, at path: Path, writeID: Int, visible: Bool = true) -> [Event]
    {
        pendingWrites.addOverwrite(node, at: path, writeID: writeID, visible: visible)
        guard visible else { return [] }
        return applyToSyncPoints(.overwrite(source: .user, path: path, node: node))
    }

    /// A local `update` of several child paths relative to `path`.
    public mutating func applyUserMerge(_ children: [Path: Node], at path: Path, writeID: Int) -> [Event] {
        pendingWrites.addMerge(children, at: path, writeID: writeID)
        return applyToSyncPoints(.merge(source: .user, path: path, children: Self.tree(children)))
    }

    /// The server confirmed (or, with `revert`, refused) write `writeID`.
    public mutating func ackUserWrite(writeID: Int, revert: Bool = false) -> [Event] {
        guard let write = pendingWrites.write(withID: writeID) else { return [] }
        guard pendingWrites.removeWrite(withID: writeID) else { return [] }
        var affected = ImmutableTree<Bool>()
        switch write.kind {
        case .overwrite: affected = affected.setting(true, at: .root)
        case .merge(let children): for path in children.keys { affected = affected.setting(true, at: path) }
        }
        return applyToSyncPoints(.ackUserWrite(path: write.path, affected: affected, revert: revert))
    }

    // MARK: Server data

    public mutating func applyServerOverwrite(_ node: Node, at path: Path) -> [Event] {
        applyToSyncPoints(.overwrite(source: .server, path: path, node: node))
    }

    public mutating func applyServerMerge(_ children: [Path: Node], at path: Path) -> [Event] {
        applyToSyncPoints(.merge(source: .server, path: path, children: Self.tree(children)))
    }

    /// All initial data for the plain listen at `path` has arrived.
    public mutating func applyListenComplete(at path: Path) -> [Event] {
        applyToSyncPoints(.listenComplete(source: .server, path: path))
    }

    /// A server overwrite addressed to the filtered query `tag`.
    public mutating func applyTaggedOverwrite(_ node: Node, at path: Path, tag: Int) -> [Event] {
        guard let key = tagToQuery[tag] else { return [] }
        let operation = Operation.overwrite(
            source: .serverTaggedQuery(key.viewID), path: Path.relative(from: key.path, to: path), node: node)
        return applyTagged(operation, at: key.path)
    }

    public mutating func applyTaggedMerge(_ children: [Path: Node], at path: Path, tag: Int) -> [Event] {
        guard let key = tagToQuery[tag] else { return [] }
        let operation = Operation.merge(
            source: .serverTaggedQuery(key.viewID), path: Path.relative(from: key.path, to: path),
            children: Self.tree(children))
        return applyTagged(operation, at: key.path)
    }

    public mutating func applyTaggedListenComplete(at path: Path, tag: Int) -> [Event] {
        guard let key = tagToQuery[tag] else { return [] }
        let operation = Operation.listenComplete(
            source: .serverTaggedQuery(key.viewID), path: Path.relative(from: key.path, to: path))
        return applyTagged(operation, at: key.path)
    }

    /// The server answered the listen for `query`: `ok` completes it, anything else cancels its listeners.
    public mutating func listenCompleted(_ query: QuerySpec, status: String) -> [Event] {
        if status == "ok" {
            if let tag = tag(for: query) { return applyTaggedListenComplete(at: query.path, tag: tag) }
            return applyListenComplete(at: query.path)
        }
        return removeRegistration(nil, for: query, cancelError: status)
    }

    /// The tag the server uses for `query`'s updates (`nil` for queries that load all data).
    public func tag(for query: QuerySpec) -> Int? {
        queryToTag[QueryKey(path: query.path, viewID: query.viewID)]
    }

    /// The hash of the server data cached for `query` (sent with listens so unchanged data is not resent).
    public func serverCacheHash(for query: QuerySpec) -> String {
        serverCache(for: query)?.hash ?? ""
    }

    /// The server data the view of `query` holds (for a filtered query, its window), if it has one.
    public func serverCache(for query: QuerySpec) -> Node? {
        syncPoints[at: query.path]?.entry(for: query)?.view.serverCacheNode
    }

    /// The data the view of `query` shows its listeners (complete or not), if it has a view.
    public func eventCache(for query: QuerySpec) -> Node? {
        syncPoints[at: query.path]?.entry(for: query)?.view.cache.eventCache.node
    }

    private mutating func applyTagged(_ operation: Operation, at queryPath: Path) -> [Event] {
        guard var syncPoint = syncPoints[at: queryPath] else { return [] }
        let writes = WriteTreeRef(path: queryPath, tree: pendingWrites)
        let events = syncPoint.apply(operation, writes: writes, completeServerCache: nil)
        syncPoints = syncPoints.setting(syncPoint, at: queryPath)
        return events
    }

    private static func tree(_ children: [Path: Node]) -> ImmutableTree<Node> {
        var tree = ImmutableTree<Node>()
        for (path, node) in children { tree = tree.setting(node, at: path) }
        return tree
    }

    // MARK: Applying operations

    private mutating func applyToSyncPoints(_ operation: Operation) -> [Event] {
        var events: [Event] = []
        syncPoints = Self.apply(
            operation, to: syncPoints, serverCache: nil, writes: WriteTreeRef(path: .root, tree: pendingWrites),
            events: &events)
        return events
    }

    private static func apply(
        _ operation: Operation, to tree: ImmutableTree<SyncPoint>, serverCache: Node?, writes: WriteTreeRef,
        events: inout [Event]
    ) -> ImmutableTree<SyncPoint> {
        guard let childName = operation.path.front else {
            return applyToDescendants(operation, tree, serverCache, writes, &events)
        }
        var syncPoint = tree.value
        let serverCache = serverCache ?? syncPoint?.completeServerCache(at: .root)
        var children = tree.children
        if let childTree = children[childName], let childOperation = operation.forChild(childName) {
            let newChild = apply(
                childOperation, to: childTree, serverCache: serverCache?.child(childName),
                writes: writes.child(childName), events: &events)
            children = children.inserting(childName, newChild)
        }
        if syncPoint != nil {
            events += syncPoint?.apply(operation, writes: writes, completeServerCache: serverCache) ?? []
        }
        return ImmutableTree(value: syncPoint, children: children)
    }

    private static func applyToDescendants(
        _ operation: Operation, _ tree: ImmutableTree<SyncPoint>, _ serverCache: Node?, _ writes: WriteTreeRef,
        _ events: inout [Event]
    ) -> ImmutableTree<SyncPoint> {
        var syncPoint = tree.value
        let serverCache = serverCache ?? syncPoint?.completeServerCache(at: .root)
        var children = tree.children
        for (childName, childTree) in tree.children {
            guard let childOperation = operation.forChild(childName) else { continue }
            let newChild = applyToDescendants(
                childOperation, childTree, serverCache?.child(childName), writes.child(childName), &events)
            children = children.inserting(childName, newChild)
        }
        if syncPoint != nil {
            events += syncPoint?.apply(operation, writes: writes, completeServerCache: serverCache) ?? []
        }
        return ImmutableTree(value: syncPoint, children: children)
    }

    // MARK: Listeners

    /// Adds a listener for `query`; returns its initial events (from cached data, if any).
    public mutating func addRegistration(_ registration: EventRegistration, for query: QuerySpec) -> [Event] {
        let path = query.path
        var serverCache: Node?
        var foundAncestorDefaultView = false
        syncPoints.forEachAbove(path) { pathToSyncPoint, syncPoint in
            let relative = Path.relative(from: pathToSyncPoint, to: path)
            serverCache = serverCache ?? syncPoint.completeServerCache(at: relative)
            foundAncestorDefaultView = foundAncestorDefaultView || syncPoint.hasCompleteView
        }
        var syncPoint = syncPoints[at: path] ?? SyncPoint()
        foundAncestorDefaultView = foundAncestorDefaultView || syncPoint.hasCompleteView
        serverCache = serverCache ?? syncPoint.completeServerCache(at: .root)
        let persisted = serverCache == nil ? persistedCache?(query) : nil
        if let persisted, persisted.complete { serverCache = persisted.node }
        let serverCacheComplete = serverCache != nil
        if serverCache == nil {
            var children = Node.empty
            syncPoints.subtree(at: path).forEachChildValue { name, child in
                if let complete = child.completeServerCache(at: .root) {
                    children = children.updatingChild(name, to: complete)
                }
            }
            // What persistence knows of other children fills the gaps.
            if let persisted {
                for (name, child) in persisted.node.children where children.child(name).isEmpty {
                    children = children.updatingChild(name, to: child)
                }
            }
            serverCache = children
        }
        let viewExists = syncPoint.entry(for: query) != nil
        if !viewExists, !query.params.loadsAllData {
            let key = QueryKey(path: path, viewID: query.viewID)
            let tag = nextTag
            nextTag += 1
            queryToTag[key] = tag
            tagToQuery[tag] = key
        }
        let writes = WriteTreeRef(path: path, tree: pendingWrites)
        let events = syncPoint.addRegistration(
            registration, for: query, writes: writes, serverCache: serverCache ?? .empty,
            serverCacheComplete: serverCacheComplete)
        syncPoints = syncPoints.setting(syncPoint, at: path)
        if !viewExists, !foundAncestorDefaultView {
            setUpListener(for: query)
        }
        return events
    }

    /// Removes `registration` (all listeners when `nil`) from `query`. With `cancelError`, the
    /// listeners get cancel events and no unlisten is sent (the server already dropped the listen).
    public mutating func removeRegistration(
        _ registration: EventRegistration?, for query: QuerySpec, cancelError: String? = nil
    ) -> [Event] {
        let path = query.path
        guard var syncPoint = syncPoints[at: path],
            query.viewID == "default" || syncPoint.entry(for: query) != nil
        else { return [] }
        let (removed, events) = syncPoint.removeRegistration(registration, for: query, cancelError: cancelError)
        syncPoints = syncPoint.isEmpty ? syncPoints.removingValue(at: path) : syncPoints.setting(syncPoint, at: path)
        let removingDefault = removed.contains { $0.params.loadsAllData }
        let covered =
            syncPoints.firstResult(on: path) { _, syncPoint in syncPoint.hasCompleteView ? true : nil } ?? false
        if removingDefault, !covered {
            let subtree = syncPoints.subtree(at: path)
            if !subtree.isEmpty {
                for entry in Self.distinctViews(in: subtree) {
                    listenProvider.startListening(entry.query.listenQuery, tag: tag(for: entry.query))
                }
            }
        }
        if !covered, !removed.isEmpty, cancelError == nil {
            if removingDefault {
                listenProvider.stopListening(query.listenQuery, tag: nil)
            } else {
                for query in removed { listenProvider.stopListening(query.listenQuery, tag: tag(for: query)) }
            }
        }
        for query in removed where !query.params.loadsAllData {
            let key = QueryKey(path: query.path, viewID: query.viewID)
            if let tag = queryToTag.removeValue(forKey: key) { tagToQuery[tag] = nil }
        }
        return events
    }

    private static func distinctViews(in subtree: ImmutableTree<SyncPoint>) -> [SyncPoint.Entry] {
        subtree.fold { _, syncPoint, children -> [SyncPoint.Entry] in
            if let complete = syncPoint?.completeView { return [complete] }
            return (syncPoint?.queryViews ?? []) + children.flatMap(\.1)
        }
    }

    private func setUpListener(for query: QuerySpec) {
        let tag = tag(for: query)
        listenProvider.startListening(query.listenQuery, tag: tag)
        guard tag == nil else { return }
        // A complete listen here covers every listen below it: stop those.
        let subtree = syncPoints.subtree(at: query.path)
        let toStop = subtree.fold { relative, syncPoint, children -> [QuerySpec] in
            if !relative.isEmpty, let complete = syncPoint?.completeView { return [complete.query] }
            return (syncPoint?.queryViews.map(\.query) ?? []) + children.flatMap(\.1)
        }
        for query in toStop { listenProvider.stopListening(query.listenQuery, tag: self.tag(for: query)) }
    }

    // MARK: Reads

    /// The event data at `path` including hidden writes, excluding `writeIDsToExclude`
    /// (what a transaction runs against).
    public func completeEventCache(at path: Path, excluding writeIDsToExclude: [Int] = []) -> Node {
        let serverCache = syncPoints.firstResult(on: path) { pathSoFar, syncPoint in
            syncPoint.completeServerCache(at: Path.relative(from: pathSoFar, to: path))
        }
        return pendingWrites.completeEventCache(
            at: path, serverCache: serverCache, excluding: writeIDsToExclude, includeHiddenWrites: true) ?? .empty
    }

    /// The complete data for `query` from cache and pending writes, if known (what `getData` can
    /// answer without the server). With `includingPersisted`, data kept from earlier runs
    /// (``persistedCache``) answers when no view in memory holds the query's data completely, if
    /// it is complete there.
    public func cachedValue(for query: QuerySpec, includingPersisted: Bool = false) -> Node? {
        let path = query.path
        var serverCache: Node?
        syncPoints.forEachAbove(path) { pathToSyncPoint, syncPoint in
            serverCache =
                serverCache ?? syncPoint.completeServerCache(at: Path.relative(from: pathToSyncPoint, to: path))
        }
        let syncPoint = syncPoints[at: path] ?? SyncPoint()
        serverCache = serverCache ?? syncPoint.completeServerCache(at: .root)
        let writes = WriteTreeRef(path: path, tree: pendingWrites)
        let view = syncPoint.view(
            for: query, writes: writes, serverCache: serverCache ?? .empty, serverCacheComplete: serverCache != nil)
        if let node = view.completeEventNode { return node }
        guard includingPersisted, let persisted = persistedCache?(query), persisted.complete else { return nil }
        return SyncPoint().view(for: query, writes: writes, serverCache: persisted.node, serverCacheComplete: true)
            .completeEventNode
    }
}
