import Tree

/// The data as it would be after a write, built only where a rule looks at it.
///
/// At or below a written location the new data is the written value itself, so most checks never
/// build the new tree; only a rule that reads `newData` above a written location (or its
/// `parent()`) makes the whole tree, once per check.
final class NewDataTree {
    private let current: Node
    /// The written locations and their values, none inside another.
    private let parts: [(Path, Node)]
    private var built: Node?

    init(current: Node, parts: [(Path, Node)]) {
        self.current = current
        self.parts = parts
    }

    /// The whole tree after the write.
    var root: Node {
        if let built { return built }
        var node = current
        for (path, value) in parts { node = node.updating(at: path, to: value) }
        built = node
        return node
    }

    /// The new data at the location `keys`.
    func node(at keys: some Collection<ChildKey>) -> Node {
        for (path, value) in parts where path.components.count <= keys.count {
            guard path.components.elementsEqual(keys.prefix(path.components.count)) else { continue }
            var node = value
            for key in keys.dropFirst(path.components.count) { node = node.child(key) }
            return node
        }
        if parts.isEmpty { return Self.descend(current, keys) }
        return Self.descend(root, keys)
    }

    private static func descend(_ start: Node, _ keys: some Collection<ChildKey>) -> Node {
        var node = start
        for key in keys { node = node.child(key) }
        return node
    }
}
