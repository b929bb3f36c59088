/// An immutable tree of optional values addressed by ``Path``: values stand at some locations,
/// children lead further down. Updates share untouched subtrees.
///
/// The sync engine keeps pending writes, listens and acknowledgements in such trees.
///
/// ```swift
/// let tree = ImmutableTree<Int>().setting(1, at: "a/b")
/// tree[at: "a/b"]                                  // 1
/// tree.rootmostValue(on: "a/b/c")?.path            // a/b
/// ```
public struct ImmutableTree<Value: Sendable>: Sendable {
    public typealias Children = SortedMap<ChildKey, ImmutableTree, KeyOrder>

    /// The value at this tree's root, if any.
    public let value: Value?
    /// The subtrees below, by key.
    public let children: Children

    public init(value: Value? = nil, children: Children = Children(order: KeyOrder())) {
        self.value = value
        self.children = children
    }

    public var isEmpty: Bool { value == nil && children.isEmpty }

    /// The value stored exactly at `path`.
    public subscript(at path: Path) -> Value? {
        var tree = self
        for key in path.components {
            guard let child = tree.children[key] else { return nil }
            tree = child
        }
        return tree.value
    }

    /// The tree rooted at `path` (empty when nothing is stored there).
    public func subtree(at path: Path) -> ImmutableTree {
        var tree = self
        for key in path.components {
            guard let child = tree.children[key] else { return ImmutableTree() }
            tree = child
        }
        return tree
    }

    /// The value nearest the root on the way to `path` that satisfies `predicate`, with its path.
    public func rootmostValue(
        on path: Path, where predicate: (Value) -> Bool = { _ in true }
    ) -> (
        path: Path, value: Value
    )? {
        var tree = self
        var depth = 0
        let keys = path.components
        while true {
            if let value = tree.value, predicate(value) {
                return (Path(keys: keys.prefix(depth)), value)
            }
            guard depth < keys.count, let child = tree.children[keys[keys.startIndex + depth]] else { return nil }
            tree = child
            depth += 1
        }
    }

    /// This tree with `value` stored at `path` (children below `path` are kept).
    public func setting(_ value: Value?, at path: Path) -> ImmutableTree {
        guard let front = path.front else { return ImmutableTree(value: value, children: children) }
        let child = children[front] ?? ImmutableTree()
        return ImmutableTree(
            value: self.value, children: children.inserting(front, child.setting(value, at: path.popFront())))
    }

    /// This tree without the value at `path` (its children are kept); empty branches are pruned.
    public func removingValue(at path: Path) -> ImmutableTree {
        guard let front = path.front else { return ImmutableTree(value: nil, children: children) }
        guard let child = children[front] else { return self }
        let newChild = child.removingValue(at: path.popFront())
        let newChildren = newChild.isEmpty ? children.removing(front) : children.inserting(front, newChild)
        return ImmutableTree(value: value, children: newChildren)
    }

    /// This tree with the whole subtree at `path` replaced by `tree`.
    public func setting(tree: ImmutableTree, at path: Path) -> ImmutableTree {
        guard let front = path.front else { return tree }
        let child = (children[front] ?? ImmutableTree()).setting(tree: tree, at: path.popFront())
        let newChildren = child.isEmpty ? children.removing(front) : children.inserting(front, child)
        return ImmutableTree(value: value, children: newChildren)
    }

    /// Folds the tree bottom-up: `body` gets each location's path, value and folded children.
    public func fold<Result>(_ body: (Path, Value?, [(ChildKey, Result)]) throws -> Result) rethrows -> Result {
        try fold(at: .root, body)
    }

    private func fold<Result>(
        at path: Path, _ body: (Path, Value?, [(ChildKey, Result)]) throws -> Result
    )
        rethrows -> Result
    {
        var folded: [(ChildKey, Result)] = []
        for (key, child) in children { folded.append((key, try child.fold(at: path.child(key), body))) }
        return try body(path, value, folded)
    }

    /// The first non-nil result of `body` for values on the way from the root to `path`.
    public func firstResult<Result>(on path: Path, _ body: (Path, Value) throws -> Result?) rethrows -> Result? {
        var tree = self
        var depth = 0
        let keys = path.components
        while true {
            if let value = tree.value, let result = try body(Path(keys: keys.prefix(depth)), value) { return result }
            guard depth < keys.count, let child = tree.children[keys[keys.startIndex + depth]] else { return nil }
            tree = child
            depth += 1
        }
    }

    /// Calls `body` for every value above `path` (excluding the value at `path` itself), root first;
    /// returns the subtree at `path`.
    @discardableResult
    public func forEachAbove(_ path: Path, _ body: (Path, Value) throws -> Void) rethrows -> ImmutableTree {
        var tree = self
        var depth = 0
        let keys = path.components
        while depth < keys.count {
            if let value = tree.value { try body(Path(keys: keys.prefix(depth)), value) }
            guard let child = tree.children[keys[keys.startIndex + depth]] else { return ImmutableTree() }
            tree = child
            depth += 1
        }
        return tree
    }

    /// Calls `body` for every value in the tree, children before their parent.
    public func forEach(_ body: (Path, Value) throws -> Void) rethrows {
        try forEach(at: .root, body)
    }

    private func forEach(at path: Path, _ body: (Path, Value) throws -> Void) rethrows {
        for (key, child) in children { try child.forEach(at: path.child(key), body) }
        if let value { try body(path, value) }
    }

    /// Calls `body` for the value of each immediate child that has one.
    public func forEachChildValue(_ body: (ChildKey, Value) throws -> Void) rethrows {
        for (key, child) in children { if let value = child.value { try body(key, value) } }
    }
}
