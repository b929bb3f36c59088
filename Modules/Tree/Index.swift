/// An ordering of a node's children: by priority (the default), by key, by value, or by the value
/// of a descendant (`orderByChild("height")`).
///
/// Ties (equal indexed values) are broken by key, so every index is a total order.
public enum Index: Sendable, Hashable, CustomStringConvertible {
    case priority
    case key
    case value
    case child(Path)

    /// The index's wire name: `.priority`, `.key`, `.value`, or the child path (`a/b`).
    public var wireName: String {
        switch self {
        case .priority: ".priority"
        case .key: ".key"
        case .value: ".value"
        case .child(let path): path.wireString
        }
    }

    /// The index a wire name denotes.
    public init(wireName: String) {
        switch wireName {
        case ".priority": self = .priority
        case ".key": self = .key
        case ".value": self = .value
        default: self = .child(Path(wireName))
        }
    }

    public var description: String { wireName }

    /// The value `node` is sorted by in this index.
    public func indexedValue(of node: Node) -> Node {
        switch self {
        case .priority: node.priorityNode
        case .key: .empty
        case .value: node
        case .child(let path): node.child(at: path)
        }
    }

    /// Three-way comparison of two children in this index.
    @inlinable public func compare(_ a: NamedNode, _ b: NamedNode) -> Int {
        switch self {
        case .key:
            return ChildKey.compare(a.name, b.name)
        case .priority:
            let order = Self.comparePriorities(a.node, b.node)
            return order != 0 ? order : ChildKey.compare(a.name, b.name)
        case .value:
            let order = Node.compare(a.node, b.node)
            return order != 0 ? order : ChildKey.compare(a.name, b.name)
        case .child(let path):
            let order = Node.compare(a.node.child(at: path), b.node.child(at: path))
            return order != 0 ? order : ChildKey.compare(a.name, b.name)
        }
    }

    @usableFromInline static func comparePriorities(_ a: Node, _ b: Node) -> Int {
        // Posts built by `makePost` carry their bound in a priority-bearing leaf; the max post is `.max`.
        switch (a.storage, b.storage) {
        case (.max, .max): return 0
        case (.max, _): return 1
        case (_, .max): return -1
        default: return Priority.compare(a.priority, b.priority)
        }
    }

    /// Whether `node` has a value in this index (a priority, the child, ...); key and value
    /// indexes are defined on every node.
    public func isDefined(on node: Node) -> Bool {
        switch self {
        case .priority: node.priority != nil
        case .key, .value: true
        case .child(let path): !node.child(at: path).isEmpty
        }
    }

    /// Whether the change from `old` to `new` moves the child in this index.
    public func indexedValueChanged(_ old: Node, _ new: Node) -> Bool {
        switch self {
        case .priority: old.priority != new.priority
        case .key: false
        case .value: old != new
        case .child(let path): old.child(at: path) != new.child(at: path)
        }
    }

    /// The smallest possible child in this index.
    public var minPost: NamedNode { .min }

    /// The largest possible child in this index.
    public var maxPost: NamedNode {
        switch self {
        case .priority, .value: .max
        case .key: NamedNode(name: .max, node: .empty)
        case .child(let path): NamedNode(name: .max, node: Node.empty.updating(at: path, to: .maxSentinel))
        }
    }

    /// A bound for queries: the position of a child named `name` whose indexed value is `value`.
    /// For the key index, `value` must be a string leaf and names the position itself.
    public func makePost(_ value: Node, name: ChildKey) -> NamedNode {
        switch self {
        case .priority:
            let priority = value.leafValue.flatMap(Priority.init(leaf:))
            return NamedNode(name: name, node: Node(.string("[PRIORITY-POST]"), priority: priority))
        case .key:
            if case .string(let key)? = value.leafValue { return NamedNode(name: ChildKey(key), node: .empty) }
            return NamedNode(name: name, node: .empty)
        case .value:
            return NamedNode(name: name, node: value)
        case .child(let path):
            return NamedNode(name: name, node: Node.empty.updating(at: path, to: value))
        }
    }
}

/// An ``Index`` as a ``SortOrder`` over children.
public struct IndexOrder: SortOrder {
    public let index: Index
    public init(_ index: Index) { self.index = index }
    @inlinable public func compare(_ a: NamedNode, _ b: NamedNode) -> Int { index.compare(a, b) }
}

extension Node {
    /// Three-way comparison in value order: empty < booleans < numbers < strings < nodes with
    /// children (all equal to each other).
    @inlinable public static func compare(_ a: Node, _ b: Node) -> Int {
        let ra = a.kindRank
        let rb = b.kindRank
        if ra != rb { return ra < rb ? -1 : 1 }
        if case .leaf(let x, _) = a.storage, case .leaf(let y, _) = b.storage { return LeafValue.compare(x, y) }
        return 0
    }
}
