public import Tree

/// Keeps the first (or last) n children within a query's range, refilling the window from
/// outside it as children leave.
public struct LimitedFilter: NodeFilter {
    public let index: Index
    let rangedFilter: RangedFilter
    let limit: Int
    /// `true` for `limitToLast`: the window is anchored at the end.
    let reverse: Bool

    public init(params: QueryParams) {
        index = params.index
        rangedFilter = RangedFilter(params: params)
        limit = params.limit?.count ?? 0
        reverse = !params.isViewFromLeft
    }

    public var indexedFilter: IndexedFilter { rangedFilter.indexedFilter }
    public var filtersNodes: Bool { true }

    public func updatePriority(_ oldSnap: Node, _ priority: Node) -> Node { oldSnap }

    public func updateChild(
        _ snap: Node, key: ChildKey, newChild: Node, affectedPath: Path, source: any CompleteChildSource,
        accumulator: inout ChildChangeAccumulator?
    ) -> Node {
        let kept = rangedFilter.matches(NamedNode(name: key, node: newChild)) ? newChild : .empty
        if snap.child(key) == kept { return snap }
        if snap.childCount < limit {
            return indexedFilter.updateChild(
                snap, key: key, newChild: kept, affectedPath: affectedPath, source: source, accumulator: &accumulator)
        }
        return fullLimitUpdateChild(snap, key: key, newChild: kept, source: source, accumulator: &accumulator)
    }

    public func updateFullNode(_ oldSnap: Node, _ newSnap: Node, accumulator: inout ChildChangeAccumulator?) -> Node {
        var selected: [(ChildKey, Node)] = []
        if !newSnap.isLeaf, limit > 0 {
            let start = reverse ? rangedFilter.endPost : rangedFilter.startPost
            for child in newSnap.children(in: index, from: start, reverse: reverse) {
                let leading = reverse ? rangedFilter.isBeforeEnd(child) : rangedFilter.isAfterStart(child)
                if !leading { continue }
                let trailing = reverse ? rangedFilter.isAfterStart(child) : rangedFilter.isBeforeEnd(child)
                if !trailing { break }
                selected.append((child.name, child.node))
                if selected.count == limit { break }
            }
        }
        let keepsAll = !newSnap.isLeaf && selected.count == newSnap.childCount
        let filtered = keepsAll ? newSnap.withPriority(nil) : Node(children: selected)
        return indexedFilter.updateFullNode(oldSnap, filtered, accumulator: &accumulator)
    }

    /// Window order: index order, or its reverse for `limitToLast`.
    private func compare(_ a: NamedNode, _ b: NamedNode) -> Int {
        reverse ? index.compare(b, a) : index.compare(a, b)
    }

    private func fullLimitUpdateChild(
        _ snap: Node, key: ChildKey, newChild: Node, source: any CompleteChildSource,
        accumulator: inout ChildChangeAccumulator?
    ) -> Node {
        let named = NamedNode(name: key, node: newChild)
        guard let boundary = reverse ? snap.firstChild(in: index) : snap.lastChild(in: index) else { return snap }
        let inRange = rangedFilter.matches(named)
        if snap.hasChild(key) {
            let oldChild = snap.child(key)
            var next = source.child(after: boundary, in: index, reverse: reverse)
            while let candidate = next, candidate.name == key || snap.hasChild(candidate.name) {
                next = source.child(after: candidate, in: index, reverse: reverse)
            }
            let compareNext = next.map { compare($0, named) } ?? 1
            if inRange, !newChild.isEmpty, compareNext >= 0 {
                accumulator?.track(.childChanged(key, newChild, old: oldChild))
                return snap.updatingChild(key, to: newChild)
            }
            accumulator?.track(.childRemoved(key, oldChild))
            let shrunk = snap.updatingChild(key, to: .empty)
            if let next, rangedFilter.matches(next) {
                accumulator?.track(.childAdded(next.name, next.node))
                return shrunk.updatingChild(next.name, to: next.node)
            }
            return shrunk
        }
        if newChild.isEmpty || !inRange { return snap }
        if compare(boundary, named) >= 0 {
            accumulator?.track(.childRemoved(boundary.name, boundary.node))
            accumulator?.track(.childAdded(key, newChild))
            return snap.updatingChild(key, to: newChild).updatingChild(boundary.name, to: .empty)
        }
        return snap
    }
}
