/// A sorted map with value semantics: a persistent AVL tree.
///
/// Every update returns a new map that shares all untouched subtrees with the old one, so an
/// update costs O(log n) time and O(log n) new storage, and a copy costs O(1). A value changed
/// through ``modifyValue(forKey:_:)`` is changed in place where the tree nodes on its way are not
/// shared with another copy (copy on write), so it allocates nothing.
///
/// | operation | cost |
/// |---|---|
/// | ``subscript(_:)``, ``inserting(_:_:)``, ``removing(_:)`` | O(log n) |
/// | ``first``, ``last``, ``predecessor(of:)``, ``successor(of:)`` | O(log n) |
/// | ``count``, copy | O(1) |
/// | iteration of k elements from any start (``elements(from:reverse:)``) | O(log n + k) |
/// | ``init(sorted:order:)`` from already sorted pairs | O(n) |
///
/// ```swift
/// let map = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder())
///     .inserting("b", 2).inserting("10", 10).inserting("a", 1)
/// Array(map.keys)   // ["10", "a", "b"]
/// ```
public struct SortedMap<Key: Sendable, Value: Sendable, Order: SortOrder<Key>>: Sendable {
    @usableFromInline typealias Tree = AVLNode<Key, Value>

    @usableFromInline var root: Tree?
    /// The order the keys are kept in.
    public let order: Order

    public init(order: Order) {
        self.root = nil
        self.order = order
    }

    @usableFromInline init(root: Tree?, order: Order) {
        self.root = root
        self.order = order
    }

    /// A map from pairs already sorted by `order` with distinct keys, built balanced in O(n) (from
    /// an array of them: see the `RandomAccessCollection` overload).
    public init<C: Collection<(Key, Value)>>(sorted pairs: C, order: Order) {
        self.init(sorted: Array(pairs), order: order)
    }

    /// A map from pairs already sorted by `order` with distinct keys, built balanced in O(n), read
    /// where they are (no copy of them is made first).
    public init<C: RandomAccessCollection<(Key, Value)>>(sorted pairs: C, order: Order) {
        func build(_ range: Range<Int>) -> Tree? {
            if range.isEmpty { return nil }
            let mid = range.lowerBound + range.count / 2
            let pair = pairs[pairs.index(pairs.startIndex, offsetBy: mid)]
            return Tree(
                key: pair.0, value: pair.1, left: build(range.lowerBound..<mid),
                right: build(mid + 1..<range.upperBound))
        }
        self.init(root: build(0..<pairs.count), order: order)
    }

    /// A map of the keys in `buffer`, already sorted by `order` and distinct, each with `value`,
    /// built balanced in O(n). The keys are moved out of `buffer`, which is left uninitialized.
    init(movingSortedKeys buffer: UnsafeMutableBufferPointer<Key>, value: Value, order: Order) {
        func build(_ range: Range<Int>) -> Tree? {
            if range.isEmpty { return nil }
            let mid = range.lowerBound + range.count / 2
            let left = build(range.lowerBound..<mid)
            let key = buffer.moveElement(from: mid)
            return Tree(key: key, value: value, left: left, right: build(mid + 1..<range.upperBound))
        }
        self.init(root: build(0..<buffer.count), order: order)
    }

    @inlinable public var isEmpty: Bool { root == nil }
    @inlinable public var count: Int { root?.count ?? 0 }

    /// The value stored for `key`. O(log n).
    @inlinable public subscript(key: Key) -> Value? {
        // The nodes are held unretained: the map, borrowed for the call, keeps them all alive.
        guard var node = root.map(Unmanaged.passUnretained) else { return nil }
        while true {
            let step = node._withUnsafeGuaranteedRef { current -> WalkStep<Key, Value> in
                let c = order.compare(key, current.key)
                if c == 0 { return .found }
                return (c < 0 ? current.left : current.right).map { .next(Unmanaged.passUnretained($0)) } ?? .absent
            }
            switch step {
            case .found: return node._withUnsafeGuaranteedRef { $0.value }
            case .next(let child): node = child
            case .absent: return nil
            }
        }
    }

    /// A map with `key` set to `value`. O(log n).
    public func inserting(_ key: Key, _ value: Value) -> SortedMap {
        SortedMap(root: Self.insert(root, key, value, order), order: order)
    }

    /// Calls `body` with the value stored for `key`, in place; `false` (and `body` is not called)
    /// when `key` is absent. O(log n); tree nodes shared with another copy of the map are copied on
    /// the way down, the others are changed in place.
    ///
    /// ```swift
    /// var scores = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder()).inserting("ada", 1)
    /// scores.modifyValue(forKey: "ada") { $0 += 1 }   // true; scores["ada"] == 2
    /// ```
    @discardableResult
    public mutating func modifyValue(forKey key: Key, _ body: (inout Value) throws -> Void) rethrows -> Bool {
        try Self.modify(&root, key, order, body)
    }

    /// Sets `key` to `value` in place: O(log n), and the tree nodes on the way that are not shared
    /// with another copy of the map are changed rather than copied, so adding a key to a map no one
    /// else holds allocates one node (plus at most two where it rebalances).
    ///
    /// ```swift
    /// var scores = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder())
    /// scores.insert("ada", 1)   // scores["ada"] == 1
    /// ```
    public mutating func insert(_ key: Key, _ value: Value) {
        var replaced: Value?
        Self.insert(&root, key, value, order, replaced: &replaced)
    }

    /// Sets `key` to `value` in place, as ``insert(_:_:)`` does, and returns the value it replaced
    /// (`nil` when `key` is new): one walk down the tree where a lookup and then an insert take two.
    ///
    /// ```swift
    /// var scores = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder()).inserting("ada", 1)
    /// scores.updateValue(2, forKey: "ada")   // 1
    /// ```
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        var replaced: Value?
        Self.insert(&root, key, value, order, replaced: &replaced)
        return replaced
    }

    /// Adds `pairs`, sorted by `order` with distinct keys that all sort after the map's last key,
    /// in O(m + log n) for m pairs: they are built into a balanced tree, joined to this one along
    /// its right edge. Returns `false`, having changed nothing, when `pairs` are not such keys
    /// (the caller then inserts them one by one).
    ///
    /// ```swift
    /// var ids = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder()).inserting("a", 1)
    /// ids.append(sorted: [("b", 2), ("c", 3)])   // true
    /// ids.append(sorted: [("a", 0)])             // false: "a" does not sort after "c"
    /// ```
    @discardableResult
    public mutating func append(sorted pairs: some RandomAccessCollection<(key: Key, value: Value)>) -> Bool {
        guard let first = pairs.first else { return true }
        var previous = first.key
        if let last = last, order.compare(last.key, previous) >= 0 { return false }
        for pair in pairs.dropFirst() {
            guard order.compare(previous, pair.key) < 0 else { return false }
            previous = pair.key
        }
        let rest = SortedMap(sorted: pairs.dropFirst().lazy.map { ($0.key, $0.value) }, order: order)
        root = Self.join(root, first.key, first.value, rest.root)
        return true
    }

    /// A map without `key` (the same map when absent). O(log n).
    public func removing(_ key: Key) -> SortedMap {
        guard self[key] != nil else { return self }
        return SortedMap(root: Self.remove(root, key, order), order: order)
    }

    /// The smallest entry. O(log n).
    public var first: (key: Key, value: Value)? {
        guard var node = root else { return nil }
        while let left = node.left { node = left }
        return (node.key, node.value)
    }

    /// The largest entry. O(log n).
    public var last: (key: Key, value: Value)? {
        guard var node = root else { return nil }
        while let right = node.right { node = right }
        return (node.key, node.value)
    }

    /// The entry just before `key` (which need not be present). O(log n).
    public func predecessor(of key: Key) -> (key: Key, value: Value)? { neighbour(of: key, before: true) }

    /// The entry just after `key` (which need not be present). O(log n).
    public func successor(of key: Key) -> (key: Key, value: Value)? { neighbour(of: key, before: false) }

    /// The entry just before (or after) `key`, walked to with the nodes unretained (the map,
    /// borrowed for the call, keeps them alive).
    private func neighbour(of key: Key, before: Bool) -> (key: Key, value: Value)? {
        var node = root.map(Unmanaged.passUnretained)
        var best: Unmanaged<Tree>?
        while let unretained = node {
            node = unretained._withUnsafeGuaranteedRef { current in
                let c = order.compare(current.key, key)
                guard before ? c < 0 : c > 0 else {
                    return (before ? current.left : current.right).map(Unmanaged.passUnretained)
                }
                best = unretained
                return (before ? current.right : current.left).map(Unmanaged.passUnretained)
            }
        }
        return best?._withUnsafeGuaranteedRef { ($0.key, $0.value) }
    }

    /// The entries in order (or reverse order), starting at the first key `>= start`
    /// (`<= start` when reversed), or at the first (last) entry when `start` is `nil`.
    @inlinable public func elements(from start: Key? = nil, reverse: Bool = false) -> Elements {
        Elements(root: root, start: start, reverse: reverse, order: order)
    }

    /// The keys in order.
    public var keys: LazyMapSequence<Elements, Key> { elements().lazy.map(\.key) }

    /// Calls `body` for each entry in order; stops early when `body` returns `false`.
    @discardableResult
    public func forEach(_ body: (Key, Value) throws -> Bool) rethrows -> Bool {
        func visit(_ node: Tree?) throws -> Bool {
            guard let node else { return true }
            return try visit(node.left) && body(node.key, node.value) && visit(node.right)
        }
        return try visit(root)
    }
}

extension SortedMap: Sequence {
    @inlinable public func makeIterator() -> Elements.Iterator { elements().makeIterator() }
}

extension SortedMap {
    /// An in-order walk over a ``SortedMap`` from a starting key, forwards or backwards. Inlinable,
    /// so that a walk from another module is specialized rather than generic.
    public struct Elements: Sequence, Sendable {
        @usableFromInline let root: Tree?
        @usableFromInline let start: Key?
        @usableFromInline let reverse: Bool
        @usableFromInline let order: Order

        @inlinable init(root: Tree?, start: Key?, reverse: Bool, order: Order) {
            self.root = root
            self.start = start
            self.reverse = reverse
            self.order = order
        }

        @inlinable public func makeIterator() -> Iterator {
            var stack: [Unmanaged<Tree>] = []
            stack.reserveCapacity(48)
            var node = root.map(Unmanaged.passUnretained)
            while let unretained = node {
                node = unretained._withUnsafeGuaranteedRef { current in
                    let left = current.left.map(Unmanaged.passUnretained)
                    let right = current.right.map(Unmanaged.passUnretained)
                    guard let start else {
                        stack.append(unretained)
                        return reverse ? right : left
                    }
                    let c = order.compare(current.key, start)
                    if reverse {
                        guard c <= 0 else { return left }
                        stack.append(unretained)
                        return c == 0 ? nil : right
                    }
                    guard c >= 0 else { return right }
                    stack.append(unretained)
                    return c == 0 ? nil : left
                }
            }
            return Iterator(root: root, stack: stack, reverse: reverse)
        }

        public struct Iterator: IteratorProtocol {
            /// Keeps the nodes on `stack`, which are held unretained, alive (and unchanged: a map
            /// that shares them copies them before it changes them).
            @usableFromInline let root: Tree?
            @usableFromInline var stack: [Unmanaged<Tree>]
            @usableFromInline let reverse: Bool

            @inlinable init(root: Tree?, stack: [Unmanaged<Tree>], reverse: Bool) {
                self.root = root
                self.stack = stack
                self.reverse = reverse
            }

            @inlinable public mutating func next() -> (key: Key, value: Value)? {
                guard let top = stack.popLast() else { return nil }
                let reverse = reverse
                return top._withUnsafeGuaranteedRef { top in
                    var node = (reverse ? top.left : top.right).map(Unmanaged.passUnretained)
                    while let current = node {
                        stack.append(current)
                        node = current._withUnsafeGuaranteedRef {
                            (reverse ? $0.right : $0.left).map(Unmanaged.passUnretained)
                        }
                    }
                    return (top.key, top.value)
                }
            }
        }
    }
}

extension SortedMap {
    /// Checks the AVL, order and size invariants; returns a description of the first violation.
    public func invariantViolation() -> String? {
        func check(_ node: Tree?, _ low: Key?, _ high: Key?) -> (height: Int, count: Int)? {
            guard let node else { return (0, 0) }
            if let low, order.compare(low, node.key) >= 0 { return nil }
            if let high, order.compare(node.key, high) >= 0 { return nil }
            guard let l = check(node.left, low, node.key), let r = check(node.right, node.key, high) else { return nil }
            guard abs(l.height - r.height) <= 1, Int(node.height) == Swift.max(l.height, r.height) + 1,
                node.count == l.count + r.count + 1
            else { return nil }
            return (Int(node.height), node.count)
        }
        return check(root, nil, nil) == nil ? "AVL invariant violated" : nil
    }
}

/// Where one step down a ``SortedMap``'s tree, looking for a key, leads: the key is in the node,
/// or below it in the child given (held unretained by a walk its map keeps alive), or absent.
@usableFromInline enum WalkStep<Key: Sendable, Value: Sendable> {
    case found
    case next(Unmanaged<AVLNode<Key, Value>>)
    case absent
}

/// A node of ``SortedMap``'s tree. Its value, children, height and count change only through
/// ``SortedMap/modifyValue(forKey:_:)`` and ``SortedMap/insert(_:_:)``, and only while the node is
/// uniquely referenced, so no other thread can see the change: that is what makes the
/// `@unchecked Sendable` sound.
@usableFromInline final class AVLNode<Key: Sendable, Value: Sendable>: @unchecked Sendable {
    @usableFromInline let key: Key
    // Changed only while uniquely referenced (see above), so the runtime's exclusivity checks, which
    // would be held across the whole descent, have nothing to catch.
    @exclusivity(unchecked) @usableFromInline var value: Value
    @exclusivity(unchecked) @usableFromInline var left: AVLNode?
    @exclusivity(unchecked) @usableFromInline var right: AVLNode?
    @exclusivity(unchecked) @usableFromInline var height: Int8
    @exclusivity(unchecked) @usableFromInline var count: Int

    @usableFromInline init(key: Key, value: Value, left: AVLNode?, right: AVLNode?) {
        self.key = key
        self.value = value
        self.left = left
        self.right = right
        self.height = Swift.max(left?.height ?? 0, right?.height ?? 0) + 1
        self.count = (left?.count ?? 0) + (right?.count ?? 0) + 1
    }
}

extension SortedMap {
    static func height(_ node: Tree?) -> Int8 { node?.height ?? 0 }

    static func balanced(_ key: Key, _ value: Value, _ left: Tree?, _ right: Tree?) -> Tree {
        let hl = height(left)
        let hr = height(right)
        if hl > hr + 1, let left {
            if height(left.left) >= height(left.right) {
                return Tree(
                    key: left.key, value: left.value, left: left.left,
                    right: Tree(key: key, value: value, left: left.right, right: right))
            }
            guard let lr = left.right else { preconditionFailure("AVL: missing left-right child") }
            return Tree(
                key: lr.key, value: lr.value,
                left: Tree(key: left.key, value: left.value, left: left.left, right: lr.left),
                right: Tree(key: key, value: value, left: lr.right, right: right))
        }
        if hr > hl + 1, let right {
            if height(right.right) >= height(right.left) {
                return Tree(
                    key: right.key, value: right.value,
                    left: Tree(key: key, value: value, left: left, right: right.left), right: right.right)
            }
            guard let rl = right.left else { preconditionFailure("AVL: missing right-left child") }
            return Tree(
                key: rl.key, value: rl.value,
                left: Tree(key: key, value: value, left: left, right: rl.left),
                right: Tree(key: right.key, value: right.value, left: rl.right, right: right.right))
        }
        return Tree(key: key, value: value, left: left, right: right)
    }

    static func insert(_ node: Tree?, _ key: Key, _ value: Value, _ order: Order) -> Tree {
        guard let node else { return Tree(key: key, value: value, left: nil, right: nil) }
        let c = order.compare(key, node.key)
        if c == 0 { return Tree(key: key, value: value, left: node.left, right: node.right) }
        if c < 0 { return balanced(node.key, node.value, insert(node.left, key, value, order), node.right) }
        return balanced(node.key, node.value, node.left, insert(node.right, key, value, order))
    }

    /// Inserts below `slot` in place, copying shared nodes on the way; only a node left out of
    /// balance is replaced, by the two or three new ones ``balanced(_:_:_:_:)`` builds.
    /// Returns whether `key` is new (an existing key only has its value replaced, and the value it
    /// had is put in `replaced`).
    @discardableResult
    static func insert(
        _ slot: inout Tree?, _ key: Key, _ value: Value, _ order: Order, replaced: inout Value?
    )
        -> Bool
    {
        // Each node is held unretained, as in ``modify(_:_:_:_:)``; a node left out of balance is
        // replaced in its slot only after the walk below it has returned.
        guard let unretained = uniqueUnretained(&slot) else {
            slot = Tree(key: key, value: value, left: nil, right: nil)
            return true
        }
        var rebalanced: Tree?
        let added = unretained._withUnsafeGuaranteedRef { node -> Bool in
            let c = order.compare(key, node.key)
            if c == 0 {
                replaced = node.value
                node.value = value
                return false
            }
            let added =
                c < 0
                ? insert(&node.left, key, value, order, replaced: &replaced)
                : insert(&node.right, key, value, order, replaced: &replaced)
            guard added else { return false }
            let hl = height(node.left)
            let hr = height(node.right)
            if abs(Int(hl) - Int(hr)) > 1 {
                rebalanced = balanced(node.key, node.value, node.left, node.right)
            } else {
                node.height = Swift.max(hl, hr) + 1
                node.count += 1
            }
            return true
        }
        if let rebalanced { slot = rebalanced }
        return added
    }

    /// Changes the value of `key` below `root`, copying shared nodes on the way; `false` when absent
    /// (the copies made on the way hold the same entries). A loop, not a recursion: `body` and what
    /// it captures are then not passed down (and copied) once per level.
    ///
    /// The walk holds each node unretained: every node on it is kept alive by its parent (the
    /// first by `root`), which the walk holds exclusively through `root`, and it changes a parent's
    /// link only to put a copy in place of a shared child. Retaining and releasing each node on the
    /// way took most of the walk's time.
    static func modify(
        _ root: inout Tree?, _ key: Key, _ order: Order, _ body: (inout Value) throws -> Void
    ) rethrows
        -> Bool
    {
        guard var current = uniqueUnretained(&root) else { return false }
        while true {
            let step = current._withUnsafeGuaranteedRef { node -> WalkStep<Key, Value> in
                let c = order.compare(key, node.key)
                if c == 0 { return .found }
                let next = c < 0 ? uniqueUnretained(&node.left) : uniqueUnretained(&node.right)
                return next.map { .next($0) } ?? .absent
            }
            switch step {
            case .next(let next): current = next
            case .found:
                try current._withUnsafeGuaranteedRef { try body(&$0.value) }
                return true
            case .absent: return false
            }
        }
    }

    /// The node in `slot`, made uniquely referenced by it (copied if shared), unretained; `nil`
    /// when `slot` is empty.
    private static func uniqueUnretained(_ slot: inout Tree?) -> Unmanaged<Tree>? {
        if !isKnownUniquelyReferenced(&slot) {
            guard let shared = slot else { return nil }
            slot = copy(of: shared)
        }
        guard let node = slot else { return nil }
        return Unmanaged.passUnretained(node)
    }

    /// A node with the same contents (kept out of line: inlined, its copies of the key and value
    /// were made on every call, shared node or not).
    @inline(never)
    static func copy(of node: Tree) -> Tree {
        Tree(key: node.key, value: node.value, left: node.left, right: node.right)
    }

    /// The tree of `left`'s entries, then `key`, then `right`'s (every key of `left` sorts before
    /// `key`, every key of `right` after it), balanced: O(|height(left) - height(right)|), new
    /// nodes only along the edge of the taller tree where the shorter one joins it.
    static func join(_ left: Tree?, _ key: Key, _ value: Value, _ right: Tree?) -> Tree {
        let hl = height(left)
        let hr = height(right)
        if hl > hr + 1, let left {
            return balanced(left.key, left.value, left.left, join(left.right, key, value, right))
        }
        if hr > hl + 1, let right {
            return balanced(right.key, right.value, join(left, key, value, right.left), right.right)
        }
        return Tree(key: key, value: value, left: left, right: right)
    }

    static func removeMin(_ node: Tree) -> (min: Tree, rest: Tree?) {
        guard let left = node.left else { return (node, node.right) }
        let (min, rest) = removeMin(left)
        return (min, balanced(node.key, node.value, rest, node.right))
    }

    static func remove(_ node: Tree?, _ key: Key, _ order: Order) -> Tree? {
        guard let node else { return nil }
        let c = order.compare(key, node.key)
        if c < 0 { return balanced(node.key, node.value, remove(node.left, key, order), node.right) }
        if c > 0 { return balanced(node.key, node.value, node.left, remove(node.right, key, order)) }
        guard let left = node.left else { return node.right }
        guard let right = node.right else { return left }
        let (min, rest) = removeMin(right)
        return balanced(min.key, min.value, left, rest)
    }
}
