/// What a child sorts by in one ``Index``, read from the child once: its priority, the child's
/// value or the value at the index's path, reduced to what comparisons look at.
///
/// Ranks follow value order: nothing (an absent value or priority), then booleans, numbers,
/// strings, nodes with children (all equal to each other), and the bound that sorts after all.
enum IndexSortValue: Sendable {
    case none
    case bool(Bool)
    case number(Double)
    case string(String)
    case children
    case max

    /// The value `node` sorts by in value order (``Node/compare(_:_:)``).
    init(_ node: Node) {
        switch node.storage {
        case .empty: self = .none
        case .leaf(.bool(let value), _): self = .bool(value)
        case .leaf(.number(let value), _): self = .number(value)
        case .leaf(.string(let value), _): self = .string(value)
        case .children, .packed: self = .children
        case .max: self = .max
        }
    }

    var rank: Int {
        switch self {
        case .none: 0
        case .bool: 1
        case .number: 2
        case .string: 3
        case .children: 4
        case .max: 5
        }
    }

    static func compare(_ a: IndexSortValue, _ b: IndexSortValue) -> Int {
        // Matched one side at a time: a switch over the pair would copy both values first.
        switch a {
        case .number(let x): if case .number(let y) = b { return x == y ? 0 : (x < y ? -1 : 1) }
        case .string(let x): if case .string(let y) = b { return compareStrings(x, y) }
        case .bool(let x): if case .bool(let y) = b { return x == y ? 0 : (!x ? -1 : 1) }
        case .none, .children, .max: break
        }
        let (ra, rb) = (a.rank, b.rank)
        return ra == rb ? 0 : (ra < rb ? -1 : 1)
    }
}

extension Index {
    /// What `node` sorts by in this index; comparing these and then the keys orders children as
    /// ``compare(_:_:)`` does.
    func sortValue(of node: Node) -> IndexSortValue {
        switch self {
        case .key: .none
        case .value: IndexSortValue(node)
        case .priority:
            switch (node.storage, node.priority) {
            case (.max, _): .max
            case (_, .number(let value)?): .number(value)
            case (_, .string(let value)?): .string(value)
            case (_, nil): .none
            }
        case .child(let path): IndexSortValue(node.child(at: path))
        }
    }
}

/// A child as a built index keeps it: with what it sorts by, read once when it enters the index,
/// so that sorting and every later insertion or removal compare without looking into the child.
struct IndexedChild: Sendable {
    let named: NamedNode
    let value: IndexSortValue

    init(_ named: NamedNode, in index: Index) {
        self.named = named
        self.value = index.sortValue(of: named.node)
    }
}

/// The order of ``IndexedChild``ren: by what they sort by, then by key.
struct IndexedChildOrder: SortOrder {
    init() {}

    func compare(_ a: IndexedChild, _ b: IndexedChild) -> Int {
        let order = IndexSortValue.compare(a.value, b.value)
        return order != 0 ? order : ChildKey.compare(a.named.name, b.named.name)
    }
}

/// A node's children sorted by one index.
typealias IndexedChildren = SortedMap<IndexedChild, Void, IndexedChildOrder>

extension SortedMap where Key == IndexedChild, Value == Void, Order == IndexedChildOrder {
    /// The children of `map` sorted by `index`: what each sorts by is read once, the entries are
    /// sorted where they were made, and the tree takes them from there without a copy.
    init(children map: ChildMap, by index: Index) {
        var buffer = UnsafeMutableBufferPointer<IndexedChild>.allocate(capacity: map.count)
        defer { buffer.deallocate() }
        var count = 0
        // `forEach` lends each child; an iterator would retain the tree's nodes on its way.
        _ = map.forEach { key, node in
            buffer.initializeElement(at: count, to: IndexedChild(NamedNode(name: key, node: node), in: index))
            count += 1
            return true
        }
        let order = IndexedChildOrder()
        buffer.sort { order.compare($0, $1) < 0 }
        self.init(movingSortedKeys: buffer, value: (), order: order)
    }
}
