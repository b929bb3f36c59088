/// A set of overwrites at paths, applied together to a node: the sum of several writes.
///
/// A write below an existing one is folded into it, so no stored write ever lies below another.
///
/// ```swift
/// let write = CompoundWrite()
///     .adding(Node(.number(1)), at: "a/b")
///     .adding(Node(.string("x")), at: "c")
/// write.apply(to: .empty)   // {"a": {"b": 1}, "c": "x"}
/// ```
public struct CompoundWrite: Sendable {
    /// The overwrites, by path.
    public let writes: ImmutableTree<Node>

    public init(writes: ImmutableTree<Node> = ImmutableTree()) { self.writes = writes }

    public static let empty = CompoundWrite()

    /// A compound write holding one overwrite per member of `updates`, each relative to `path`.
    public init(merging updates: [Path: Node], at path: Path = .root) {
        self = CompoundWrite().adding(updates, at: path)
    }

    public var isEmpty: Bool { writes.isEmpty }

    /// This write plus an overwrite of `path` with `node`.
    public func adding(_ node: Node, at path: Path) -> CompoundWrite {
        if path.isEmpty { return CompoundWrite(writes: ImmutableTree(value: node)) }
        if let rootmost = writes.rootmostValue(on: path) {
            let relative = Path.relative(from: rootmost.path, to: path)
            return CompoundWrite(
                writes: writes.setting(rootmost.value.updating(at: relative, to: node), at: rootmost.path))
        }
        return CompoundWrite(writes: writes.setting(tree: ImmutableTree(value: node), at: path))
    }

    /// This write plus each overwrite of `updates`, at paths relative to `path`.
    public func adding(_ updates: [Path: Node], at path: Path) -> CompoundWrite {
        var result = self
        for (relative, node) in updates.sorted(by: { $0.key < $1.key }) {
            result = result.adding(node, at: path.child(relative))
        }
        return result
    }

    /// This write without anything at or below `path`.
    public func removing(at path: Path) -> CompoundWrite {
        if path.isEmpty { return .empty }
        return CompoundWrite(writes: writes.setting(tree: ImmutableTree(), at: path))
    }

    /// Whether this write fully determines the data at `path`.
    public func hasCompleteWrite(at path: Path) -> Bool { completeNode(at: path) != nil }

    /// The data this write fully determines at `path`, if it does.
    public func completeNode(at path: Path) -> Node? {
        guard let rootmost = writes.rootmostValue(on: path) else { return nil }
        return rootmost.value.child(at: Path.relative(from: rootmost.path, to: path))
    }

    /// The children this write fully determines at its root, in priority order.
    public var completeChildren: [NamedNode] {
        if let node = writes.value {
            return node.isLeaf ? [] : Array(node.children(in: .priority))
        }
        var result: [NamedNode] = []
        writes.forEachChildValue { key, node in result.append(NamedNode(name: key, node: node)) }
        return result
    }

    /// The part of this write at and below `path`, re-rooted there.
    public func childWrite(at path: Path) -> CompoundWrite {
        if path.isEmpty { return self }
        if let shadowing = completeNode(at: path) { return CompoundWrite(writes: ImmutableTree(value: shadowing)) }
        return CompoundWrite(writes: writes.subtree(at: path))
    }

    /// `node` with every overwrite applied. Priority writes apply last, and only to non-empty data.
    public func apply(to node: Node) -> Node {
        Self.apply(writes, at: .root, to: node)
    }

    private static func apply(_ tree: ImmutableTree<Node>, at path: Path, to node: Node) -> Node {
        if let value = tree.value { return node.updating(at: path, to: value) }
        var result = node
        var priorityWrite: Node?
        for (key, child) in tree.children {
            if key.isPriorityKey {
                priorityWrite = child.value
            } else {
                result = apply(child, at: path.child(key), to: result)
            }
        }
        if let priorityWrite, !result.child(at: path).isEmpty {
            result = result.updating(at: path.child(.priority), to: priorityWrite)
        }
        return result
    }
}

/// Checks a multi-path update: no path may be written together with one of its descendants.
public enum UpdateValidation {
    /// Throws ``TreeError/overlappingUpdate(_:_:)`` when two of `paths` overlap (`a` and `a/b`).
    public static func checkNoOverlap(_ paths: some Sequence<Path>) throws(TreeError) {
        try checkNoOverlap(sorted: paths.sorted())
    }

    /// ``checkNoOverlap(_:)`` for paths already in ascending order, in O(n): a path that contains
    /// another sorts right before it or before one of its siblings that it contains too. A path
    /// given twice overlaps itself.
    public static func checkNoOverlap(sorted paths: some Collection<Path>) throws(TreeError) {
        for (previous, next) in zip(paths, paths.dropFirst()) where previous.contains(next) {
            throw .overlappingUpdate(previous.wireString, next.wireString)
        }
    }
}
