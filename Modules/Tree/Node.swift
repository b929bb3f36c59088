import Synchronization

/// The children of a node, sorted in key order.
public typealias ChildMap = SortedMap<ChildKey, Node, KeyOrder>

/// An immutable JSON tree: empty (null), a leaf value, or sorted children; optionally with a priority.
///
/// Updates return new nodes that share every untouched subtree: changing one child of a node with
/// n children costs O(log n) time and storage (plus O(log n) per index built on that node, see
/// ``children(in:from:reverse:)``), and copying a node is O(1).
///
/// ```swift
/// let node = try Node(jsonText: #"{"users": {"ada": {"age": 36}}}"#)
/// node.child(at: "users/ada/age")                       // 36
/// let older = node.updating(at: "users/ada/age", to: Node(.number(37)))
/// ```
public struct Node: Sendable {
    @usableFromInline enum Storage: Sendable {
        case empty
        case leaf(LeafValue, Priority?)
        case children(ChildrenStorage)
        /// Children held as the compact JSON text of an object, without priorities (see
        /// ``Node/packedText``): decoded when something looks inside, turned into ``children(_:)``
        /// when changed.
        case packed(String)
        /// Sorts after every node; only used for query bounds.
        case max
    }

    @usableFromInline var storage: Storage

    @usableFromInline init(storage: Storage) { self.storage = storage }

    /// The empty node (JSON `null`, an absent location).
    public static let empty = Node(storage: .empty)
    static let maxSentinel = Node(storage: .max)

    /// A leaf holding `value`.
    public init(_ value: LeafValue, priority: Priority? = nil) {
        storage = .leaf(value, priority)
    }

    /// A node with the given children (empty children are dropped; no children gives ``empty``).
    public init(children: some Sequence<(ChildKey, Node)>, priority: Priority? = nil) {
        var map = ChildMap(order: KeyOrder())
        for (key, child) in children where !child.isEmpty { map.insert(key, child) }
        self = Node(map: map, priority: priority)
    }

    /// A node over an already built child map.
    public init(map: ChildMap, priority: Priority?) {
        if map.isEmpty {
            storage = .empty
        } else {
            storage = .children(ChildrenStorage(children: map, priority: priority))
        }
    }

    @inlinable public var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    @inlinable public var isLeaf: Bool {
        if case .leaf = storage { return true }
        return false
    }

    /// The value of a leaf, `nil` for other nodes.
    public var leafValue: LeafValue? {
        if case .leaf(let value, _) = storage { return value }
        return nil
    }

    public var priority: Priority? {
        switch storage {
        case .leaf(_, let priority): priority
        case .children(let storage): storage.priority
        case .empty, .max, .packed: nil
        }
    }

    var hasPriority: Bool {
        switch storage {
        case .leaf(_, .some): true
        case .children(let storage): storage.priority != nil
        case .leaf(_, .none), .empty, .max, .packed: false
        }
    }

    /// The priority as a node (a leaf, or empty), as the `.priority` pseudo-child reads.
    public var priorityNode: Node {
        priority.map { Node($0.leafValue) } ?? .empty
    }

    /// The children in key order (empty for leaves).
    public var children: ChildMap {
        switch storage {
        case .children(let storage): storage.children
        case .packed(let text): Node.unpacked(text)
        case .empty, .leaf, .max: ChildMap(order: KeyOrder())
        }
    }

    public var childCount: Int {
        switch storage {
        case .children(let storage): storage.children.count
        case .packed(let text): PackedObject.count(of: text)
        case .empty, .leaf, .max: 0
        }
    }

    /// The child named `key` (``empty`` when absent); `.priority` reads the priority. O(log n).
    public func child(_ key: ChildKey) -> Node {
        if key.isPriorityKey { return priorityNode }
        return existingChild(key) ?? .empty
    }

    /// The data child named `key`, `nil` when there is none: O(log n), or a scan of packed text.
    private func existingChild(_ key: ChildKey) -> Node? {
        switch storage {
        case .children(let storage): storage.child(key)
        case .packed(let text): PackedObject.child(key, in: text)
        case .empty, .leaf, .max: nil
        }
    }

    /// The node at `path` below this one (``empty`` when absent). O(depth · log n).
    public func child(at path: Path) -> Node {
        var node = self
        for key in path.components {
            if key.isPriorityKey { return node.priorityNode }
            guard let next = node.existingChild(key) else { return .empty }
            node = next
        }
        return node
    }

    public func hasChild(_ key: ChildKey) -> Bool { !child(key).isEmpty }

    /// This node with its child `key` replaced by `node` (removed when `node` is empty).
    /// A leaf becomes a node with children; a node left without children becomes ``empty``.
    public func updatingChild(_ key: ChildKey, to node: Node) -> Node {
        if key.isPriorityKey { return withPriority(node.leafValue.flatMap(Priority.init(leaf:))) }
        return replacingChild(key, old: existingChild(key), with: node)
    }

    /// `updatingChild` for a data key whose current child `old` the caller already looked up.
    private func replacingChild(_ key: ChildKey, old: Node?, with node: Node) -> Node {
        switch storage {
        case .empty, .max, .leaf:
            if node.isEmpty { return self }
            let map = ChildMap(order: KeyOrder()).inserting(key, node)
            return Node(storage: .children(ChildrenStorage(children: map, priority: priority)))
        case .packed(let text):
            var map = Node.unpacked(text)
            if node.isEmpty {
                guard old != nil else { return self }
                map = map.removing(key)
            } else {
                map = map.inserting(key, node)
            }
            return Node(map: map, priority: nil)
        case .children(let storage):
            let map: ChildMap
            if node.isEmpty {
                guard old != nil else { return self }
                map = storage.children.removing(key)
                if map.isEmpty { return .empty }
            } else {
                map = storage.children.inserting(key, node)
            }
            return Node(storage: .children(storage.updating(key: key, old: old, new: node, map: map)))
        }
    }

    /// This node with the node at `path` replaced by `node`.
    public func updating(at path: Path, to node: Node) -> Node {
        guard let front = path.front else { return node }
        if front.isPriorityKey { return updatingChild(front, to: node) }
        let old = existingChild(front)
        return replacingChild(front, old: old, with: (old ?? .empty).updating(at: path.popFront(), to: node))
    }

    /// Replaces the node at `path` by `node`: the same result as ``updating(at:to:)``, but the
    /// nodes on the way are changed in place where they are not shared with another copy (copy on
    /// write), so overwriting an existing location of a tree no one else holds allocates nothing.
    ///
    /// ```swift
    /// var tree = try Node(json: ["users": ["ada": ["age": 36]]])
    /// tree.update(at: "users/ada/age", to: Node(.number(37)))
    /// ```
    public mutating func update(at path: Path, to node: Node) {
        _ = updateInPlace(at: path, to: node)
    }

    /// What ``updateInPlace(at:to:)`` did to a node, for its parent's bookkeeping.
    struct InPlaceChange {
        var hadPriority: Bool
        var hasPriority: Bool
        var isEmpty: Bool
    }

    /// ``update(at:to:)``, telling what it did: the parent learns it without reading its child
    /// (reading a value held by a class in place costs a copy of it).
    mutating func updateInPlace(at path: Path, to node: Node) -> InPlaceChange {
        let hadPriority = hasPriority
        guard let front = path.front else {
            self = node
            return InPlaceChange(hadPriority: hadPriority, hasPriority: node.hasPriority, isEmpty: node.isEmpty)
        }
        if !front.isPriorityKey, case .packed(let text) = storage {
            // Changed in place from here on: a map this node alone holds.
            storage = .children(ChildrenStorage(children: Node.unpacked(text), priority: nil))
        }
        guard !front.isPriorityKey, case .children(var box) = storage else {
            self = updating(at: path, to: node)
            return InPlaceChange(hadPriority: hadPriority, hasPriority: hasPriority, isEmpty: isEmpty)
        }
        storage = .empty
        guard isKnownUniquelyReferenced(&box), box.canChangeInPlace else {
            self = Node(storage: .children(box)).updating(at: path, to: node)
            return InPlaceChange(hadPriority: hadPriority, hasPriority: hasPriority, isEmpty: isEmpty)
        }
        let rest = path.popFront()
        if !box.modifyChild(front, { $0.updateInPlace(at: rest, to: node) }) {
            // A new child: it joins the map in place too.
            let child = Node.empty.updating(at: rest, to: node)
            if !child.isEmpty { box.insertChild(front, child) }
            storage = .children(box)
            return InPlaceChange(hadPriority: hadPriority, hasPriority: hadPriority, isEmpty: false)
        }
        // A node with children keeps its priority; one left without children is empty.
        guard !box.children.isEmpty else {
            return InPlaceChange(hadPriority: hadPriority, hasPriority: false, isEmpty: true)
        }
        storage = .children(box)
        return InPlaceChange(hadPriority: hadPriority, hasPriority: hadPriority, isEmpty: false)
    }

    /// Sets children of the node at `path` in place, each `key` to its `node` (none empty), one walk
    /// of the child map per child where ``updateInPlace(at:to:)`` takes three (a lookup, a change
    /// that finds nothing, an insertion). Returns the children replaced, in order (`.empty` for new
    /// ones); `nil`, having changed nothing, unless every node from here to `path` has children,
    /// none packed, indexed or held elsewhere (see ``ChildrenStorage/canChangeInPlace``).
    ///
    /// ```swift
    /// let replaced = root.setChildrenInPlace(at: "users", [("u1", ada), ("u2", grace)])
    /// ```
    package mutating func setChildrenInPlace(at path: Path, _ children: [(key: ChildKey, node: Node)]) -> [Node]? {
        guard !children.contains(where: \.node.isEmpty) else { return nil }
        return changeChildrenInPlace(at: path) { $0.setChildren(children) }
    }

    /// Sets child `key` of the node at `path` to `node` (not empty) in place, as
    /// ``setChildrenInPlace(at:_:)`` does for one child, without an array for it or for what it
    /// replaced (a write of one value is the most common write). Returns the child replaced
    /// (`.empty` when it is new), or `nil`, having changed nothing, under the same conditions or
    /// when `key` is `.priority`.
    package mutating func setChildInPlace(at path: Path, key: ChildKey, to node: Node) -> Node? {
        guard !node.isEmpty, !key.isPriorityKey else { return nil }
        return changeChildrenInPlace(at: path) { $0.setChild(key, node) }
    }

    /// Runs `change` on the child storage of the node at `path`, reached in place, when every node
    /// from here to it has children, none packed, indexed or held elsewhere; `nil` otherwise.
    private mutating func changeChildrenInPlace<Replaced>(
        at path: Path, _ change: (ChildrenStorage) -> Replaced
    ) -> Replaced? {
        guard case .children(var box) = storage else { return nil }
        storage = .empty
        defer { storage = .children(box) }
        guard isKnownUniquelyReferenced(&box), box.canChangeInPlace else { return nil }
        guard let front = path.front else { return change(box) }
        guard !front.isPriorityKey else { return nil }
        var replaced: Replaced?
        _ = box.modifyChild(front) { child in
            replaced = child.changeChildrenInPlace(at: path.popFront(), change)
            return InPlaceChange(hadPriority: child.hasPriority, hasPriority: child.hasPriority, isEmpty: false)
        }
        return replaced
    }

    /// This node with `priority` (the empty node cannot hold one and stays empty).
    public func withPriority(_ priority: Priority?) -> Node {
        switch storage {
        case .empty, .max: self
        case .leaf(let value, _): Node(value, priority: priority)
        case .children(let storage):
            Node(storage: .children(storage.withPriority(priority)))
        case .packed(let text):
            priority == nil ? self : Node(map: Node.unpacked(text), priority: priority)
        }
    }

    /// Rank of the node's kind in value order: empty, leaves, nodes with children, the max sentinel.
    @usableFromInline var kindRank: Int {
        switch storage {
        case .empty: 0
        case .leaf: 1
        case .children, .packed: 2
        case .max: 3
        }
    }
}

extension Priority {
    /// The priority a leaf value can be (numbers and strings), `nil` for booleans.
    public init?(leaf: LeafValue) {
        switch leaf {
        case .number(let value): self = .number(value)
        case .string(let value): self = .string(value)
        case .bool: return nil
        }
    }
}

extension Node: Equatable {
    public static func == (lhs: Node, rhs: Node) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case (.empty, .empty), (.max, .max): return true
        case (.leaf(let a, let pa), .leaf(let b, let pb)): return a == b && pa == pb
        case (.children(let a), .children(let b)) where a === b:
            return true
        case (.packed(let a), .packed(let b)):
            // By bytes: keys that differ only in Unicode normalization are different keys.
            return a.utf8.elementsEqual(b.utf8)
        case (.children, .children), (.children, .packed), (.packed, .children):
            guard lhs.priority == rhs.priority else { return false }
            let a = lhs.children
            let b = rhs.children
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }
}

/// Storage of a node with children: the child map plus lazily built indexes and hash.
///
/// Its children change in place only through ``modifyChild(_:_:)``, called by ``Node/update(at:to:)``
/// while the storage is uniquely referenced, so no other thread can see the change: that is what
/// makes the `@unchecked Sendable` sound.
@usableFromInline final class ChildrenStorage: @unchecked Sendable {
    @exclusivity(unchecked) private var map: ChildMap
    let priority: Priority?
    /// How many children carry a priority; when none do, priority order is key order.
    private(set) var prioritizedChildren: Int
    let cache: Mutex<Cache>

    struct Cache {
        var hash: String?
        var indexes: [Index: BuiltIndex]
        /// The hashes of the packed children, once this node's hash was computed: a packed node
        /// keeps nothing but its text, so without them each computation of this hash after a
        /// change would decode every packed child again. Kept current by every change of a
        /// child (in place, or carried to the storage an update derives, in O(log n)).
        var packedHashes: SortedMap<ChildKey, String, KeyOrder>?
    }

    init(
        children: ChildMap, priority: Priority?, prioritizedChildren: Int, indexes: [Index: BuiltIndex],
        packedHashes: SortedMap<ChildKey, String, KeyOrder>? = nil
    ) {
        self.map = children
        self.priority = priority
        self.prioritizedChildren = prioritizedChildren
        self.cache = Mutex(Cache(hash: nil, indexes: indexes, packedHashes: packedHashes))
    }

    /// Storage for a freshly built map; counts prioritized children in O(n).
    convenience init(children: ChildMap, priority: Priority?) {
        var count = 0
        _ = children.forEach { _, child in
            if child.priority != nil { count += 1 }
            return true
        }
        self.init(children: children, priority: priority, prioritizedChildren: count, indexes: [:])
    }

    /// The children in key order.
    var children: ChildMap { map }

    /// The child named `key`, if any: O(log n).
    func child(_ key: ChildKey) -> Node? { map[key] }

    var indexSnapshot: [Index: BuiltIndex] { cache.withLock { $0.indexes } }

    /// This storage with child `key` changed from `old` to `new` (`new` not empty, or `old` present),
    /// carrying every built index a query used lately along in O(log n) each (see ``IndexRetention``).
    func updating(key: ChildKey, old: Node?, new: Node, map: ChildMap) -> ChildrenStorage {
        var indexes = indexSnapshot
        if !indexes.isEmpty {
            let retention = IndexRetention.current
            let expired = retention.now() - retention.unusedLifetime
            for (index, built) in indexes {
                guard built.lastUsed >= expired else {
                    indexes[index] = nil
                    continue
                }
                var updated = built.children
                if let old { updated = updated.removing(IndexedChild(NamedNode(name: key, node: old), in: index)) }
                if !new.isEmpty {
                    updated = updated.inserting(IndexedChild(NamedNode(name: key, node: new), in: index), ())
                }
                indexes[index] = BuiltIndex(children: updated, lastUsed: built.lastUsed)
            }
        }
        let count = prioritizedChildren - (old?.priority != nil ? 1 : 0) + (new.priority != nil ? 1 : 0)
        let packedHashes = cache.withLock { $0.packedHashes }.map { $0.removing(key) }
        return ChildrenStorage(
            children: map, priority: priority, prioritizedChildren: count, indexes: indexes, packedHashes: packedHashes)
    }

    /// Whether ``modifyChild(_:_:)`` may be used: no index was built, which would need the child's
    /// old and new value to be kept in order.
    var canChangeInPlace: Bool { cache.withLock { $0.indexes.isEmpty } }

    /// Changes child `key` in place (the caller holds the only reference to this storage and
    /// ``canChangeInPlace``); `false` when there is no such child. A child left empty is removed,
    /// and the hash is computed anew.
    func modifyChild(_ key: ChildKey, _ body: (inout Node) -> Node.InPlaceChange) -> Bool {
        var change: Node.InPlaceChange?
        guard map.modifyValue(forKey: key, { change = body(&$0) }), let change else { return false }
        prioritizedChildren += (change.hasPriority ? 1 : 0) - (change.hadPriority ? 1 : 0)
        if change.isEmpty { map = map.removing(key) }
        childrenChanged([key])
        return true
    }

    /// Adds child `key`, which this storage does not have, in place (under the same conditions as
    /// ``modifyChild(_:_:)``).
    func insertChild(_ key: ChildKey, _ node: Node) {
        map.insert(key, node)
        if node.priority != nil { prioritizedChildren += 1 }
        childrenChanged([key])
    }

    /// Sets each child `key` to its node in place (under the same conditions as
    /// ``modifyChild(_:_:)``; no node empty), one walk of the map per child; returns the children
    /// replaced, in order, `.empty` for those that are new.
    func setChildren(_ children: [(key: ChildKey, node: Node)]) -> [Node] {
        // New children after the last (an import of a node exported in key order) join the map whole.
        if children.count > 1, map.append(sorted: children.lazy.map { (key: $0.key, value: $0.node) }) {
            prioritizedChildren += children.count(where: { $0.node.priority != nil })
            // New keys: none has a hash kept.
            cache.withLock { $0.hash = nil }
            return Array(repeating: .empty, count: children.count)
        }
        var replaced: [Node] = []
        replaced.reserveCapacity(children.count)
        var prioritized = prioritizedChildren
        for (key, node) in children {
            let old = map.updateValue(node, forKey: key) ?? .empty
            prioritized += (node.priority != nil ? 1 : 0) - (old.priority != nil ? 1 : 0)
            replaced.append(old)
        }
        prioritizedChildren = prioritized
        childrenChanged(children.lazy.map(\.key))
        return replaced
    }

    /// Sets child `key` to `node` (not empty) in place, as ``setChildren(_:)`` does for one child;
    /// returns the child replaced, `.empty` when it is new.
    func setChild(_ key: ChildKey, _ node: Node) -> Node {
        let old = map.updateValue(node, forKey: key) ?? .empty
        prioritizedChildren += (node.priority != nil ? 1 : 0) - (old.priority != nil ? 1 : 0)
        childrenChanged(CollectionOfOne(key))
        return old
    }

    /// Forgets this node's hash, and the kept hashes of the children `keys` (changed in place).
    private func childrenChanged(_ keys: some Sequence<ChildKey>) {
        cache.withLock { cache in
            cache.hash = nil
            guard cache.packedHashes != nil else { return }
            for key in keys { cache.packedHashes = cache.packedHashes?.removing(key) }
        }
    }

    func withPriority(_ priority: Priority?) -> ChildrenStorage {
        ChildrenStorage(
            children: children, priority: priority, prioritizedChildren: prioritizedChildren, indexes: indexSnapshot,
            packedHashes: cache.withLock { $0.packedHashes })
    }

    /// The children sorted by `index`, built on first use in O(n log n) and kept for this node's
    /// lifetime (and carried to nodes derived from it by updates while queries use it; see
    /// ``IndexRetention``).
    func sorted(by index: Index) -> IndexedChildren {
        let retention = IndexRetention.current
        let now = retention.now()
        let found = cache.withLock { cache -> IndexedChildren? in
            guard let built = cache.indexes[index]?.children else { return nil }
            cache.indexes[index]?.lastUsed = now
            return built
        }
        if let found { return found }
        let built = IndexedChildren(children: children, by: index)
        let limit = retention.maxPerNode
        cache.withLock { cache in
            while cache.indexes.count >= limit,
                let oldest = cache.indexes.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
            {
                cache.indexes[oldest] = nil
            }
            cache.indexes[index] = BuiltIndex(children: built, lastUsed: now)
        }
        return built
    }
}
