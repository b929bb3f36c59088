public import Tree

/// Applies a query's selection to a view's data as it changes, reporting child changes.
///
/// Three filters nest: ``IndexedFilter`` (every child, kept sorted), ``RangedFilter`` (children
/// between the query's bounds) and ``LimitedFilter`` (the first or last n of those).
public protocol NodeFilter: Sendable {
    /// `snap` with child `key` replaced by `newChild` (of which only `affectedPath` changed).
    func updateChild(
        _ snap: Node, key: ChildKey, newChild: Node, affectedPath: Path, source: any CompleteChildSource,
        accumulator: inout ChildChangeAccumulator?
    ) -> Node
    /// `newSnap` filtered, with the child changes from `oldSnap`.
    func updateFullNode(_ oldSnap: Node, _ newSnap: Node, accumulator: inout ChildChangeAccumulator?) -> Node
    /// `oldSnap` with a new priority (filtered views drop priorities).
    func updatePriority(_ oldSnap: Node, _ priority: Node) -> Node
    /// Whether this filter may leave children out.
    var filtersNodes: Bool { get }
    /// The unfiltered filter over the same index.
    var indexedFilter: IndexedFilter { get }
    var index: Index { get }
}

extension QueryParams {
    /// The filter that selects this query's children.
    public var nodeFilter: any NodeFilter {
        if loadsAllData { return IndexedFilter(index: index) }
        if limit != nil { return LimitedFilter(params: self) }
        return RangedFilter(params: self)
    }
}

/// Keeps every child; reports additions, removals and changes.
public struct IndexedFilter: NodeFilter {
    public let index: Index

    public init(index: Index) { self.index = index }

    public func updateChild(
        _ snap: Node, key: ChildKey, newChild: Node, affectedPath: Path, source: any CompleteChildSource,
        accumulator: inout ChildChangeAccumulator?
    ) -> Node {
        let oldChild = snap.child(key)
        if oldChild.child(at: affectedPath) == newChild.child(at: affectedPath), oldChild.isEmpty == newChild.isEmpty {
            return snap
        }
        if accumulator != nil {
            if newChild.isEmpty {
                if snap.hasChild(key) { accumulator?.track(.childRemoved(key, oldChild)) }
            } else if oldChild.isEmpty {
                accumulator?.track(.childAdded(key, newChild))
            } else {
                accumulator?.track(.childChanged(key, newChild, old: oldChild))
            }
        }
        if snap.isLeaf, newChild.isEmpty { return snap }
        return snap.updatingChild(key, to: newChild)
    }

    public func updateFullNode(_ oldSnap: Node, _ newSnap: Node, accumulator: inout ChildChangeAccumulator?) -> Node {
        if accumulator != nil {
            for old in oldSnap.children(in: .priority) where !newSnap.hasChild(old.name) {
                accumulator?.track(.childRemoved(old.name, old.node))
            }
            for new in newSnap.children(in: .priority) {
                let oldChild = oldSnap.child(new.name)
                if oldChild.isEmpty {
                    accumulator?.track(.childAdded(new.name, new.node))
                } else if oldChild != new.node {
                    accumulator?.track(.childChanged(new.name, new.node, old: oldChild))
                }
            }
        }
        return newSnap
    }

    public func updatePriority(_ oldSnap: Node, _ priority: Node) -> Node {
        oldSnap.isEmpty ? .empty : oldSnap.updatingChild(.priority, to: priority)
    }

    public var filtersNodes: Bool { false }
    public var indexedFilter: IndexedFilter { self }
}

/// Keeps the children between a query's start and end bounds.
public struct RangedFilter: NodeFilter {
    public let index: Index
    public let indexedFilter: IndexedFilter
    public let startPost: NamedNode
    public let endPost: NamedNode
    let startInclusive: Bool
    let endInclusive: Bool

    public init(params: QueryParams) {
        index = params.index
        indexedFilter = IndexedFilter(index: params.index)
        startPost = params.startPost
        endPost = params.endPost
        startInclusive = params.start?.inclusive ?? true
        endInclusive = params.end?.inclusive ?? true
    }

    /// Whether `child` lies at or after the start bound.
    public func isAfterStart(_ child: NamedNode) -> Bool {
        let order = index.compare(startPost, child)
        return startInclusive ? order <= 0 : order < 0
    }

    /// Whether `child` lies at or before the end bound.
    public func isBeforeEnd(_ child: NamedNode) -> Bool {
        let order = index.compare(child, endPost)
        return endInclusive ? order <= 0 : order < 0
    }

    /// Whether `child` lies within the range.
    public func matches(_ child: NamedNode) -> Bool { isAfterStart(child) && isBeforeEnd(child) }

    public func updateChild(
        _ snap: Node, key: ChildKey, newChild: Node, affectedPath: Path, source: any CompleteChildSource,
        accumulator: inout ChildChangeAccumulator?
    ) -> Node {
        let kept = matches(NamedNode(name: key, node: newChild)) ? newChild : .empty
        return indexedFilter.updateChild(
            snap, key: key, newChild: kept, affectedPath: affectedPath, source: source, accumulator: &accumulator)
    }

    public func updateFullNode(_ oldSnap: Node, _ newSnap: Node, accumulator: inout ChildChangeAccumulator?) -> Node {
        var selected: [(ChildKey, Node)] = []
        if !newSnap.isLeaf {
            for child in newSnap.children(in: index, from: startPost) {
                if !isAfterStart(child) { continue }
                if !isBeforeEnd(child) { break }
                selected.append((child.name, child.node))
            }
        }
        let keepsAll = !newSnap.isLeaf && selected.count == newSnap.childCount
        let filtered = keepsAll ? newSnap.withPriority(nil) : Node(children: selected)
        return indexedFilter.updateFullNode(oldSnap, filtered, accumulator: &accumulator)
    }

    public func updatePriority(_ oldSnap: Node, _ priority: Node) -> Node { oldSnap }
    public var filtersNodes: Bool { true }
}
