import Persistence
public import Tree

/// One overwrite of the data at ``path`` with ``node`` (``Node/empty`` deletes). A multi-path update
/// is several of these, committed together by ``ServerStore/commit(_:)``.
///
/// A write replaces everything at ``path``, priorities included, exactly as
/// ``Node/updating(at:to:)`` does: a write below a leaf turns the leaf into a node with children
/// (keeping its priority), and a deletion that leaves a location without children removes it, and
/// its priority, too. A write to `<location>/.priority` sets only that location's priority (numbers
/// and strings; any other node removes it) and does nothing where the location is empty.
///
/// ```swift
/// try store.commit([
///     StoredWrite(path: "users/ada/age", node: Node(.number(37))),
///     StoredWrite(path: "users/ada/.priority", node: Node(.number(1))),
///     StoredWrite(path: "users/bob", node: .empty),
/// ])
/// ```
public struct StoredWrite: Sendable, Equatable {
    /// The location written; `.priority` may only stand last.
    public var path: Path
    /// The data that replaces whatever is at ``path``.
    public var node: Node
    /// The writer knows that nothing is stored at or below ``path`` when this write commits (the
    /// server checks its tree, which holds what the store will hold by then): a store may skip
    /// clearing the location. Writing a new child of a wide node then costs only its own rows.
    public var locationWasEmpty: Bool
    /// The writer knows that nothing is stored strictly below ``path`` when this write commits (the
    /// location held nothing, or a leaf without a priority): a store may skip clearing below it.
    public var nothingBelowLocation: Bool
    /// The writer knows that no location above ``path`` holds a leaf when this write commits: a
    /// store may skip replacing such a leaf.
    public var noLeafAbove: Bool

    public init(
        path: Path, node: Node, locationWasEmpty: Bool = false, nothingBelowLocation: Bool = false,
        noLeafAbove: Bool = false
    ) {
        self.path = path
        self.node = node
        self.locationWasEmpty = locationWasEmpty
        self.nothingBelowLocation = nothingBelowLocation || locationWasEmpty
        self.noLeafAbove = noLeafAbove
    }

    /// Sets what the writer knows (``locationWasEmpty``, ``nothingBelowLocation``,
    /// ``noLeafAbove``) from `stored`, the data the store will hold when this write commits, in one
    /// walk down ``path``. A priority write learns nothing.
    ///
    /// A write inside a packed node of `stored` becomes a write of that node's location, as
    /// ``widenToPackedAncestor(in:)`` makes it, in the same walk.
    ///
    /// ```swift
    /// write.learn(from: root)      // the tree, with every write queued before this one applied
    /// root.update(at: write.path, to: write.node)
    /// ```
    public mutating func learn(from stored: Node) {
        let (location, index) = walkDown(stored)
        if index < path.components.endIndex, location.packedText != nil {
            widen(to: index, of: location)
            return
        }
        guard !isPriorityWrite else { return }
        let leafAbove = index < path.components.endIndex && location.leafValue != nil
        let found = index < path.components.endIndex ? Node.empty : location
        locationWasEmpty = found.isEmpty
        nothingBelowLocation = found.isEmpty || (found.leafValue != nil && found.priority == nil)
        noLeafAbove = !leafAbove
    }

    /// ``learn(from:)`` for a write whose parent location was found holding children, none of them
    /// packed, with no leaf on the way down to it; `replaced` is what the write replaces (`.empty`
    /// when nothing). For writers that change many children of one node in one walk each
    /// (``Node/setChildrenInPlace(at:_:)``).
    public mutating func learn(replacing replaced: Node) {
        guard !isPriorityWrite else { return }
        locationWasEmpty = replaced.isEmpty
        nothingBelowLocation = replaced.isEmpty || (replaced.leafValue != nil && replaced.priority == nil)
        noLeafAbove = true
    }

    /// Walks down ``path`` in `stored` as far as it goes: to the location, or to the first node on
    /// the way that is empty, a leaf or packed. Returns that node and the index in ``path``'s
    /// components of the first key not walked.
    private func walkDown(_ stored: Node) -> (node: Node, index: Int) {
        let keys = path.components
        var location = stored
        var index = keys.startIndex
        while index < keys.endIndex, location.packedText == nil, !location.isEmpty, location.leafValue == nil {
            location = location.child(keys[index])
            index += 1
        }
        return (location, index)
    }

    /// Makes this write one of the packed node `packed`, found at ``path``'s components before
    /// `index`.
    private mutating func widen(to index: Int, of packed: Node) {
        let components = path.components
        node = packed.updating(at: Path(keys: components[index...]), to: node)
        path = Path(keys: components[..<index])
        // The packed node is replaced whole, and the walk down to it met no leaf.
        locationWasEmpty = false
        nothingBelowLocation = false
        noLeafAbove = true
    }
}

extension StoredWrite {
    /// Turns a write strictly inside a packed node of `stored` (see ``Node/packedText``) into a
    /// write of the whole packed node with its new value: a store keeps a packed node as one row,
    /// which a write below it would delete with the rest of the node. A writer that commits into a
    /// tree holding packed nodes calls this (``learn(from:)`` does) and applies the write as it
    /// then stands.
    public mutating func widenToPackedAncestor(in stored: Node) {
        let (location, index) = walkDown(stored)
        guard index < path.components.endIndex, location.packedText != nil else { return }
        // Only what the writer knew before: this walk learns nothing else.
        let knewNoLeafAbove = noLeafAbove
        widen(to: index, of: location)
        noLeafAbove = knewNoLeafAbove
    }

    /// Whether this write sets a priority (its path ends in `.priority`).
    var isPriorityWrite: Bool { path.back?.isPriorityKey ?? false }

    /// Checks that every key of ``path`` can be stored (see ``StoredKey/problem(with:)``), with
    /// `.priority` allowed as the last key only.
    func validatePath() throws(StoreError) {
        let keys = path.components
        for (offset, key) in zip(keys.indices, keys) {
            if key.isPriorityKey, offset == keys.index(before: keys.endIndex) { continue }
            if let reason = StoredKey.problem(with: key) {
                throw .invalidWrite(path: path.wireString, reason: "key \"\(key.string)\" \(reason)")
            }
        }
    }

    /// Checks ``path`` and every key inside ``node``. O(size of node).
    func validate() throws(StoreError) {
        try validatePath()
        if isPriorityWrite { return }
        try validateKeys(of: node)
    }

    private func validateKeys(of node: Node) throws(StoreError) {
        for (key, child) in node.children {
            if let reason = StoredKey.problem(with: key) { throw childKeyError(key, reason) }
            try validateKeys(of: child)
        }
    }

    /// The error for a key inside ``node`` that cannot be stored.
    func childKeyError(_ key: ChildKey, _ reason: String) -> StoreError {
        .invalidWrite(path: path.wireString, reason: "child key \"\(key.string)\" below it \(reason)")
    }
}

/// The rule for keys the stores accept: rows are addressed by keys joined with `/`, and a node's
/// priority lives in a pseudo-child named `.priority`.
enum StoredKey {
    /// Why `key` cannot name stored data, or `nil` when it can.
    static func problem(with key: ChildKey) -> String? {
        let utf8 = key.string.utf8
        if utf8.isEmpty { return "is empty" }
        for byte in utf8 {
            if byte == UInt8(ascii: "/") { return "contains '/'" }
            // SQLite receives paths as C strings.
            if byte == 0 { return "contains a NUL character" }
        }
        if key.isPriorityKey { return "is .priority, which only a path's last key may be" }
        return nil
    }
}
