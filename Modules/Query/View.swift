public import Tree

/// One query's view of a location: its caches, and the events each operation raises.
///
/// A view does not know its listeners; the caller delivers each returned change to the listeners
/// registered for its ``EventType``.
public struct View: Sendable {
    public let params: QueryParams
    public private(set) var cache: ViewCache
    let processor: ViewProcessor
    let generator: EventGenerator

    /// A view seeded with `initialCache`, filtered by `params`.
    public init(params: QueryParams, initialCache: ViewCache) {
        self.params = params
        let indexFilter = IndexedFilter(index: params.index)
        let filter = params.nodeFilter
        processor = ViewProcessor(filter: filter)
        generator = EventGenerator(index: params.index)
        var none: ChildChangeAccumulator?
        let serverSnap = indexFilter.updateFullNode(.empty, initialCache.serverCache.node, accumulator: &none)
        let eventSnap = filter.updateFullNode(.empty, initialCache.eventCache.node, accumulator: &none)
        cache = ViewCache(
            eventCache: CacheNode(
                node: eventSnap, isFullyInitialized: initialCache.eventCache.isFullyInitialized,
                isFiltered: filter.filtersNodes),
            serverCache: CacheNode(
                node: serverSnap, isFullyInitialized: initialCache.serverCache.isFullyInitialized,
                isFiltered: indexFilter.filtersNodes))
    }

    /// The server data, complete or not.
    public var serverCacheNode: Node { cache.serverCache.node }
    /// The event data when complete.
    public var completeEventNode: Node? { cache.completeEventNode }

    /// The complete server data at `path` below the view, when the view knows it.
    public func completeServerCache(at path: Path) -> Node? {
        guard let node = cache.completeServerNode else { return nil }
        if params.loadsAllData { return node.child(at: path) }
        if let front = path.front, !node.child(front).isEmpty { return node.child(at: path) }
        return nil
    }

    /// Applies `operation` and returns the resulting events in delivery order.
    public mutating func apply(
        _ operation: Operation, writes: any PendingWrites, completeServerCache: Node?
    )
        -> [Change]
    {
        let result = processor.apply(operation, to: cache, writes: writes, completeCache: completeServerCache)
        cache = result.cache
        return generator.events(for: result.changes, eventCache: cache.eventCache.node)
    }

    /// The events a newly added listener gets: `child_added` for every child, then `value` when complete.
    public func initialEvents() -> [Change] {
        let eventCache = cache.eventCache
        var changes: [Change] = []
        if !eventCache.node.isLeaf {
            for child in eventCache.node.children(in: .priority) { changes.append(.childAdded(child.name, child.node)) }
        }
        if eventCache.isFullyInitialized { changes.append(.value(eventCache.node)) }
        return generator.events(for: changes, eventCache: eventCache.node)
    }
}
