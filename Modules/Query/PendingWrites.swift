public import Tree

/// The local writes not yet confirmed by the server, as seen from one location: what a view
/// layers over server data. The client's write tree implements it; the server, which has no
/// pending writes, uses ``NoPendingWrites``.
public protocol PendingWrites: Sendable {
    /// The data a pending write fully determines at `path` (relative to this location), if any.
    func shadowingWrite(at path: Path) -> Node?
    /// Server data with every visible pending write applied; `nil` when neither is complete.
    func completeEventCache(serverCache: Node?) -> Node?
    /// The children known completely: the server's plus those pending writes fully determine.
    func completeEventChildren(serverChildren: Node) -> Node
    /// The data to show at `childPath` after the server overwrote it, or `nil` when it cannot be known.
    func eventCacheAfterServerOverwrite(childPath: Path, eventCache: Node?, serverCache: Node?) -> Node?
    /// The complete data of child `key`, if server data and pending writes determine it.
    func completeChild(_ key: ChildKey, serverCache: CacheNode) -> Node?
    /// Up to `count` complete children after `start` in `index` order (before it when `reverse`).
    func indexedSlice(
        completeServerData: Node?, start: NamedNode, count: Int, reverse: Bool, index: Index
    )
        -> [NamedNode]
}

/// No pending writes: views show server data as it is.
public struct NoPendingWrites: PendingWrites {
    public init() {}

    public func shadowingWrite(at path: Path) -> Node? { nil }
    public func completeEventCache(serverCache: Node?) -> Node? { serverCache }
    public func completeEventChildren(serverChildren: Node) -> Node { serverChildren }
    public func eventCacheAfterServerOverwrite(childPath: Path, eventCache: Node?, serverCache: Node?) -> Node? {
        serverCache?.child(at: childPath)
    }
    public func completeChild(_ key: ChildKey, serverCache: CacheNode) -> Node? {
        serverCache.isComplete(forChild: key) ? serverCache.node.child(key) : nil
    }
    public func indexedSlice(
        completeServerData: Node?, start: NamedNode, count: Int, reverse: Bool, index: Index
    )
        -> [NamedNode]
    {
        guard let data = completeServerData else { return [] }
        var result: [NamedNode] = []
        for child in data.children(in: index, from: start, reverse: reverse) {
            if result.count == count { break }
            let order = index.compare(child, start)
            if reverse ? order < 0 : order > 0 { result.append(child) }
        }
        return result
    }
}

/// Answers "what is the complete data of this child?" and "which child comes next?" while a
/// filter refills a limited window.
public protocol CompleteChildSource {
    func completeChild(_ key: ChildKey) -> Node?
    func child(after child: NamedNode, in index: Index, reverse: Bool) -> NamedNode?
}

/// A source that knows nothing.
public struct NoCompleteChildSource: CompleteChildSource {
    public init() {}
    public func completeChild(_ key: ChildKey) -> Node? { nil }
    public func child(after child: NamedNode, in index: Index, reverse: Bool) -> NamedNode? { nil }
}

/// Complete children from a view's caches and the pending writes over them.
public struct WriteTreeCompleteChildSource: CompleteChildSource {
    let writes: any PendingWrites
    let viewCache: ViewCache
    let completeServerCache: Node?

    public init(writes: any PendingWrites, viewCache: ViewCache, completeServerCache: Node?) {
        self.writes = writes
        self.viewCache = viewCache
        self.completeServerCache = completeServerCache
    }

    public func completeChild(_ key: ChildKey) -> Node? {
        let eventCache = viewCache.eventCache
        if eventCache.isComplete(forChild: key) { return eventCache.node.child(key) }
        let serverCache =
            completeServerCache.map { CacheNode(node: $0, isFullyInitialized: true, isFiltered: false) }
            ?? viewCache.serverCache
        return writes.completeChild(key, serverCache: serverCache)
    }

    public func child(after child: NamedNode, in index: Index, reverse: Bool) -> NamedNode? {
        let data = completeServerCache ?? viewCache.completeServerNode
        return writes.indexedSlice(completeServerData: data, start: child, count: 1, reverse: reverse, index: index)
            .first
    }
}
