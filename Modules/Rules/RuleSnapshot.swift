import Tree

/// What `root`, `data` and `newData` hold: one location of a tree, the current data or the data
/// as it would be after a write.
///
/// Only `parent()` needs the location's keys (and the whole tree, which the evaluation context
/// holds), so a snapshot reached by `child(path)` keeps `path` as written after the keys it
/// started from, instead of building a new array of keys.
struct RuleSnapshot: Sendable {
    /// The node at the location.
    let node: Node
    /// Whether the location is in the data after the write (`newData`), not the current data.
    let isNewData: Bool
    /// The location, from the root down: these keys…
    private let keys: ArraySlice<ChildKey>
    /// …then the keys of this path (`/`-separated; empty keys are skipped).
    private let relativePath: String

    /// The location `keys`, where the node is `node`.
    init(keys: ArraySlice<ChildKey>, node: Node, isNewData: Bool = false) {
        self.init(node: node, isNewData: isNewData, keys: keys, relativePath: "")
    }

    private init(node: Node, isNewData: Bool, keys: ArraySlice<ChildKey>, relativePath: String) {
        self.node = node
        self.isNewData = isNewData
        self.keys = keys
        self.relativePath = relativePath
    }

    /// The location `path` (keys separated by `/`) below this one. Unless `locating`, the result
    /// keeps this snapshot's location (joining the paths costs an allocation), so `parent()` must
    /// not be called on it.
    func child(_ path: String, locating: Bool = true) -> RuleSnapshot {
        let joined = !locating ? relativePath : relativePath.isEmpty ? path : relativePath + "/" + path
        return RuleSnapshot(node: Self.descend(node, path), isNewData: isNewData, keys: keys, relativePath: joined)
    }

    /// The node at `path` below this location.
    func childNode(_ path: String) -> Node {
        Self.descend(node, path)
    }

    /// The location above this one in `tree` (the tree this location belongs to), `nil` at the root.
    func parent(in tree: Node) -> RuleSnapshot? {
        var allKeys = Array(keys)
        Self.forEachKey(of: relativePath) { allKeys.append($0) }
        guard !allKeys.isEmpty else { return nil }
        allKeys.removeLast()
        var node = tree
        for key in allKeys { node = node.child(key) }
        return RuleSnapshot(keys: allKeys[...], node: node, isNewData: isNewData)
    }

    private static func descend(_ start: Node, _ path: String) -> Node {
        var node = start
        forEachKey(of: path) { node = node.child($0) }
        return node
    }

    private static func forEachKey(of path: String, _ body: (ChildKey) -> Void) {
        var rest = Substring(path)
        while !rest.isEmpty {
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            if end != rest.startIndex { body(ChildKey(String(rest[..<end]))) }
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
        }
    }
}
