import Synchronization

extension Node {
    /// The children in the order of `index`, starting at the first child not before `start`
    /// (not after it when `reverse`).
    ///
    /// The key index walks the child map directly. Other indexes are built on first use, in
    /// O(n log n), kept with the node and maintained by every update derived from it, so later
    /// queries cost O(log n + k) for k children read. A node whose children carry no priority
    /// walks the child map for the priority index too, since both orders agree.
    public func children(in index: Index, from start: NamedNode? = nil, reverse: Bool = false) -> ChildSequence {
        let from = start.map { IndexedChild($0, in: index) }
        switch storage {
        case .children(let storage):
            if index == .key || (storage.prioritizedChildren == 0 && index == .priority && start?.node.priority == nil)
            {
                return ChildSequence(.byKey(storage.children.elements(from: start?.name, reverse: reverse)))
            }
            return ChildSequence(.byIndex(storage.sorted(by: index).elements(from: from, reverse: reverse)))
        case .packed(let text):
            // No priorities inside; other orders are sorted anew (a packed node is small).
            let children = Node.unpacked(text)
            if index == .key || (index == .priority && start?.node.priority == nil) {
                return ChildSequence(.byKey(children.elements(from: start?.name, reverse: reverse)))
            }
            let sorted = IndexedChildren(children: children, by: index)
            return ChildSequence(.byIndex(sorted.elements(from: from, reverse: reverse)))
        case .empty, .leaf, .max:
            return ChildSequence(.none)
        }
    }

    /// The first child in `index` order.
    public func firstChild(in index: Index) -> NamedNode? {
        var iterator = children(in: index).makeIterator()
        return iterator.next()
    }

    /// The last child in `index` order.
    public func lastChild(in index: Index) -> NamedNode? {
        var iterator = children(in: index, reverse: true).makeIterator()
        return iterator.next()
    }

    /// The key of the child just before `name` (holding `child`) in `index` order, if any.
    public func predecessor(of name: ChildKey, child: Node, in index: Index) -> ChildKey? {
        let named = IndexedChild(NamedNode(name: name, node: child), in: index)
        switch storage {
        case .children(let storage):
            if index == .key || (storage.prioritizedChildren == 0 && index == .priority && child.priority == nil) {
                return storage.children.predecessor(of: name)?.key
            }
            return storage.sorted(by: index).predecessor(of: named)?.key.named.name
        case .packed(let text):
            let children = Node.unpacked(text)
            if index == .key || (index == .priority && child.priority == nil) {
                return children.predecessor(of: name)?.key
            }
            return IndexedChildren(children: children, by: index).predecessor(of: named)?.key.named.name
        case .empty, .leaf, .max:
            return nil
        }
    }
}

/// Children of a node in one index's order; see ``Node/children(in:from:reverse:)``.
public struct ChildSequence: Sequence, Sendable {
    enum Source: Sendable {
        case none
        case byKey(ChildMap.Elements)
        case byIndex(IndexedChildren.Elements)
    }

    let source: Source

    init(_ source: Source) { self.source = source }

    public func makeIterator() -> Iterator {
        switch source {
        case .none: Iterator(state: .none)
        case .byKey(let elements): Iterator(state: .byKey(elements.makeIterator()))
        case .byIndex(let elements): Iterator(state: .byIndex(elements.makeIterator()))
        }
    }

    public struct Iterator: IteratorProtocol {
        enum State {
            case none
            case byKey(ChildMap.Elements.Iterator)
            case byIndex(IndexedChildren.Elements.Iterator)
        }

        var state: State

        public mutating func next() -> NamedNode? {
            switch state {
            case .none:
                return nil
            case .byKey(var iterator):
                let element = iterator.next()
                state = .byKey(iterator)
                return element.map { NamedNode(name: $0.key, node: $0.value) }
            case .byIndex(var iterator):
                let element = iterator.next()
                state = .byIndex(iterator)
                return element?.key.named
            }
        }
    }
}

extension Node {
    /// Whether this node already holds a sorted index for `index` (built by an earlier query on it
    /// or carried over from the node it was derived from). Key order never needs one.
    public func hasBuiltIndex(_ index: Index) -> Bool {
        guard case .children(let storage) = storage else { return false }
        return storage.cache.withLock { $0.indexes[index] != nil }
    }
}
