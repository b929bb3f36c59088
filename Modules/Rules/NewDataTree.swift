import Tree

/// The data as it would be after a write, built only where a rule looks at it.
///
/// At or below a written location the new data is the written value itself, so most checks never
/// build the new tree; only a rule that reads `newData` above a written location (or its
/// `parent()`) makes the whole tree, once per check when it is looked up through ``node(at:)``.
struct NewDataTree {
    private let current: Node
    let parts: WriteParts
    private var built: Node?

    init(current: Node, parts: WriteParts) {
        self.current = current
        self.parts = parts
    }

    /// The whole tree after the write (built again on each use until ``node(at:)`` kept it).
    var root: Node {
        if let built { return built }
        return build()
    }

    /// The new data at the location `keys`.
    mutating func node(at keys: ArraySlice<ChildKey>) -> Node {
        for (path, value) in parts where path.components.count <= keys.count {
            guard path.components.elementsEqual(keys.prefix(path.components.count)) else { continue }
            var node = value
            for key in keys.dropFirst(path.components.count) { node = node.child(key) }
            return node
        }
        if parts.isEmpty { return Self.descend(current, keys) }
        if built == nil { built = build() }
        return Self.descend(built ?? current, keys)
    }

    private func build() -> Node {
        var node = current
        for (path, value) in parts { node = node.updating(at: path, to: value) }
        return node
    }

    private static func descend(_ start: Node, _ keys: ArraySlice<ChildKey>) -> Node {
        var node = start
        for key in keys { node = node.child(key) }
        return node
    }
}
