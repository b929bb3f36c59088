public import Tree

/// Data cached for a view, with what is known about its completeness.
public struct CacheNode: Sendable {
    public var node: Node
    /// Whether `node` holds everything the view's query selects (not just some children).
    public var isFullyInitialized: Bool
    /// Whether `node` was cut down by a range or limit (so a missing child may still exist).
    public var isFiltered: Bool

    public init(node: Node, isFullyInitialized: Bool, isFiltered: Bool) {
        self.node = node
        self.isFullyInitialized = isFullyInitialized
        self.isFiltered = isFiltered
    }

    /// Whether the data at `path` below this cache is known exactly.
    public func isComplete(at path: Path) -> Bool {
        guard let front = path.front else { return isFullyInitialized && !isFiltered }
        return isComplete(forChild: front)
    }

    public func isComplete(forChild key: ChildKey) -> Bool {
        (isFullyInitialized && !isFiltered) || node.hasChild(key)
    }
}

/// A view's two caches: what the server said (`serverCache`) and what listeners see
/// (`eventCache`: server data with pending local writes applied, filtered by the query).
public struct ViewCache: Sendable {
    public var eventCache: CacheNode
    public var serverCache: CacheNode

    public init(eventCache: CacheNode, serverCache: CacheNode) {
        self.eventCache = eventCache
        self.serverCache = serverCache
    }

    public func updatingEventCache(_ node: Node, complete: Bool, filtered: Bool) -> ViewCache {
        ViewCache(
            eventCache: CacheNode(node: node, isFullyInitialized: complete, isFiltered: filtered),
            serverCache: serverCache)
    }

    public func updatingServerCache(_ node: Node, complete: Bool, filtered: Bool) -> ViewCache {
        ViewCache(
            eventCache: eventCache,
            serverCache: CacheNode(node: node, isFullyInitialized: complete, isFiltered: filtered))
    }

    /// The event data when complete.
    public var completeEventNode: Node? { eventCache.isFullyInitialized ? eventCache.node : nil }
    /// The server data when complete.
    public var completeServerNode: Node? { serverCache.isFullyInitialized ? serverCache.node : nil }
}
