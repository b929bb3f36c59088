public import Tree

/// Orders a view's changes into events: removals, additions, moves, changes, then `value`; within
/// each kind in the query's order, with `prevName` filled in from the new data.
public struct EventGenerator: Sendable {
    public let index: Index

    public init(index: Index) { self.index = index }

    /// The changes in delivery order, each `child_*` change completed with its `prevName`.
    /// A `child_changed` that moves the child in the index also yields a `child_moved`.
    public func events(for changes: [Change], eventCache: Node) -> [Change] {
        var moves: [Change] = []
        for change in changes where change.type == .childChanged {
            if let name = change.childName, let old = change.oldNode, index.indexedValueChanged(old, change.node) {
                moves.append(.childMoved(name, change.node))
            }
        }
        var result: [Change] = []
        result.reserveCapacity(changes.count + moves.count)
        append(.childRemoved, from: changes, eventCache, to: &result)
        append(.childAdded, from: changes, eventCache, to: &result)
        append(.childMoved, from: moves, eventCache, to: &result)
        append(.childChanged, from: changes, eventCache, to: &result)
        result.append(contentsOf: changes.filter { $0.type == .value })
        return result
    }

    private func append(_ type: EventType, from changes: [Change], _ eventCache: Node, to result: inout [Change]) {
        var selected = changes.filter { $0.type == type }
        selected.sort { a, b in
            index.compare(
                NamedNode(name: a.childName ?? .min, node: a.node), NamedNode(name: b.childName ?? .min, node: b.node))
                < 0
        }
        for var change in selected {
            if type != .childRemoved, let name = change.childName {
                change.prevName = eventCache.predecessor(of: name, child: change.node, in: index)
            }
            result.append(change)
        }
    }
}
