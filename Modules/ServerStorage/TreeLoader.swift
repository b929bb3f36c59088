package import Tree

/// Builds a ``Node`` from `nodes` rows in one pass, bottom-up.
///
/// Rows are gathered into a mutable trie, then every node's children are sorted once and turned
/// into a balanced child map with ``SortedMap/init(sorted:order:)``: O(n) for rows in path order
/// (O(n log c) otherwise, for c children per node), instead of one O(depth · log c)
/// ``Node/updating(at:to:)`` per row, which is 2.5 to 3.5 times slower.
///
/// Rows in path order share most keys with the row before, so the loader keeps the trie entries of
/// the previous row's location and only looks up the keys that differ. Path order is not key order
/// (`a!b` sorts between `a` and `a/b`, and `10` after `9`), so a key can come back after a sibling;
/// any order of rows gives the same tree.
package struct TreeLoader {
    private final class Entry {
        var leaf: LeafValue?
        /// The text of a packed node (see ``Node/packedText``).
        var packed: String?
        var priority: Priority?
        /// Children in the order first seen: byte order of their keys when rows come in path order.
        var children: [(key: ChildKey, entry: Entry)] = []
        /// The byte-greatest child key: a key above it is new without a lookup.
        var greatest: String?
        /// Positions in `children` by key (compared by bytes, as ``ChildKey`` does), built the first
        /// time a key arrives that is not above every key seen.
        var positions: [ChildKey: Int]?

        func child(_ component: Substring) -> Entry {
            if let last = children.last, last.key.string.utf8.elementsEqual(component.utf8) { return last.entry }
            if let greatest, !greatest.utf8.lexicographicallyPrecedes(component.utf8) {
                let key = ChildKey(String(component))
                if positions == nil {
                    positions = Dictionary(
                        children.indices.map { (children[$0].key, $0) }, uniquingKeysWith: { first, _ in first })
                }
                if let position = positions?[key] { return children[position].entry }
                return append(key)
            }
            greatest = String(component)
            return append(ChildKey(String(component)))
        }

        private func append(_ key: ChildKey) -> Entry {
            let entry = Entry()
            positions?[key] = children.count
            children.append((key, entry))
            return entry
        }
    }

    private let root = Entry()
    /// Entries along the previous row's location: `entries[0]` is the root, `entries[i + 1]` the
    /// child `keys[i]` of `entries[i]`.
    private var keys: [Substring] = []
    private var entries: [Entry]

    package init() { entries = [root] }

    /// Adds the row `path` holding `value`; throws when the value does not decode.
    package mutating func add(path: String, value: String) throws(TreeLoaderError) {
        // Split on the byte: a key may start with a combining mark, which `Character` splitting
        // would glue to the slash.
        var components = path.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
        let isPriority = components.last?.utf8.elementsEqual(ChildKey.priority.string.utf8) ?? false
        if isPriority { components.removeLast() }
        let entry = self.entry(at: components)
        if isPriority {
            guard let priority = StoredValue.priority(from: value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not a priority (a JSON number or string)")
            }
            entry.priority = priority
        } else if value.utf8.first == UInt8(ascii: "{") {
            guard Node.isPackedText(value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not the packed text of an object")
            }
            entry.packed = value
        } else {
            guard let leaf = StoredValue.leaf(from: value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not a JSON boolean, finite number or string")
            }
            entry.leaf = leaf
        }
    }

    private mutating func entry(at components: [Substring]) -> Entry {
        var shared = 0
        while shared < keys.count, shared < components.count, keys[shared].utf8.elementsEqual(components[shared].utf8) {
            shared += 1
        }
        keys.removeSubrange(shared...)
        entries.removeSubrange((shared + 1)...)
        var entry = entries[shared]
        for component in components[shared...] {
            entry = entry.child(component)
            keys.append(component)
            entries.append(entry)
        }
        return entry
    }

    /// The tree of every row added. A location with both a leaf and children (which commits never
    /// produce) reads as the children; a priority without data is dropped.
    package func build() -> Node { Self.node(of: root) }

    private static func node(of entry: Entry) -> Node {
        if entry.children.isEmpty {
            if let packed = entry.packed { return Node(packedObject: packed) }
            guard let leaf = entry.leaf else { return .empty }
            return Node(leaf, priority: entry.priority)
        }
        var pairs: [(ChildKey, Node)] = []
        pairs.reserveCapacity(entry.children.count)
        for (key, child) in entry.children {
            let node = node(of: child)
            if !node.isEmpty { pairs.append((key, node)) }
        }
        // Nearly sorted already (byte order differs from key order only for integer keys), which
        // the standard sort handles in about one comparison per element.
        pairs.sort { ChildKey.compare($0.0, $1.0) < 0 }
        return Node(map: ChildMap(sorted: pairs, order: KeyOrder()), priority: entry.priority)
    }
}

/// A row ``TreeLoader`` could not decode.
package struct TreeLoaderError: Error {
    package var row: String
    package var value: String
    package var reason: String
}
