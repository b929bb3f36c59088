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
        /// The text of a packed node (see ``Node/packedText``), when a location has other rows too.
        var packed: String?
        var priority: Priority?
        /// Children in the order first seen: byte order of their keys when rows come in path order.
        var children: [(key: ChildKey, child: Child)] = []
        /// The byte-greatest child key: a key above it is new without a lookup.
        var greatest: String?
        /// Positions in `children` by key (compared by bytes, as ``ChildKey`` does), built the first
        /// time a key arrives that is not above every key seen.
        var positions: [ChildKey: Int]?

        /// A child location: rows below it still to come, or a packed node made from its one row.
        /// Made at once, a packed node leaves no entry behind to free once the tree is built, whose
        /// holes among the nodes kept would stay in the server's memory (a wide node of records is
        /// a row, and once an entry, per record).
        enum Child {
            case entry(Entry)
            case packed(Node)
        }

        /// The entry of child `component`, added if new; a child made packed node takes an entry
        /// holding its text.
        func child(_ component: Substring) -> Entry {
            let position = self.position(of: component)
            if case .entry(let entry) = children[position].child { return entry }
            let entry = Entry()
            if case .packed(let node) = children[position].child { entry.packed = node.packedText }
            children[position].child = .entry(entry)
            return entry
        }

        /// Makes child `component` the packed node of `text`, or gives its entry the text.
        func setPacked(_ component: Substring, _ text: String) {
            let position = self.position(of: component)
            if case .entry(let entry) = children[position].child {
                entry.packed = text
            } else {
                children[position].child = .packed(Node(packedObject: text))
            }
        }

        /// The position of child `component` in `children`, added (as an empty entry) if new.
        private func position(of component: Substring) -> Int {
            if let last = children.last, last.key.string.utf8.elementsEqual(component.utf8) {
                return children.count - 1
            }
            if let greatest, !greatest.utf8.lexicographicallyPrecedes(component.utf8) {
                let key = ChildKey(String(component))
                if positions == nil {
                    positions = Dictionary(
                        children.indices.map { (children[$0].key, $0) }, uniquingKeysWith: { first, _ in first })
                }
                if let position = positions?[key] { return position }
                return append(key)
            }
            greatest = String(component)
            return append(ChildKey(String(component)))
        }

        private func append(_ key: ChildKey) -> Int {
            positions?[key] = children.count
            children.append((key, .packed(.empty)))
            return children.count - 1
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
        if isPriority {
            components.removeLast()
            guard let priority = StoredValue.priority(from: value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not a priority (a JSON number or string)")
            }
            entry(at: components).priority = priority
        } else if value.utf8.first == UInt8(ascii: "{") {
            guard Node.isPackedText(value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not the packed text of an object")
            }
            guard let last = components.popLast() else {
                root.packed = value
                return
            }
            entry(at: components).setPacked(last, value)
        } else {
            guard let leaf = StoredValue.leaf(from: value) else {
                throw TreeLoaderError(row: path, value: value, reason: "not a JSON boolean, finite number or string")
            }
            entry(at: components).leaf = leaf
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
            let node: Node
            switch child {
            case .entry(let entry): node = Self.node(of: entry)
            case .packed(let packed): node = packed
            }
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
