package import Persistence
import Tree

/// One change to the rows of a store that keeps a row per leaf, per packed node (see
/// ``Node/packedText``) and per priority (see
/// ``SQLiteServerStore``'s `v1` migration): what a ``StoredWrite`` becomes, before any store runs it.
package enum RowOperation: Sendable, Equatable {
    /// Every row goes (a write at the root).
    case deleteAll
    /// The row at `path` goes, if there is one.
    case deleteRow(String)
    /// The rows strictly below the non-root location `path` go.
    case deleteBelow(String)
    /// After a deletion at `path`: the priority rows of its ancestors left without data go, deepest
    /// first, up to the first ancestor that still holds data (an empty location has no priority).
    case pruneEmptyAncestors(of: String)
    /// The priority of the location at `path` becomes `text` (a stored priority), or goes when
    /// `nil`; it is only stored where the location holds data.
    case setPriority(of: String, text: String?)
    /// The row at `path` holds `text` (a stored leaf or priority), replacing any row there.
    case upsert(path: String, text: String)
}

/// Turns the writes of one transaction into ``RowOperation``s, validating every key and value on
/// the way, so that every store applies a write the same way.
///
/// A write of n leaf and priority rows becomes n + 2 operations (the old row at the path, the rows
/// below it, the rows of the new data; a leaf's row replaces the old one, so a leaf costs two) plus
/// one deletion per ancestor whose leaf row must go, each ancestor once per transaction. A write
/// whose location the writer knows was empty (``StoredWrite/locationWasEmpty``) skips the first two;
/// one it knows held nothing below (``StoredWrite/nothingBelowLocation``) skips the rows below, and
/// one it knows had no leaf above (``StoredWrite/noLeafAbove``) the ancestors' deletions.
package struct RowPlan {
    /// Row paths known, within this transaction, to hold no leaf: ancestors whose leaf rows an
    /// earlier write deleted. Closed under ancestors (a path's ancestors are in it too), so a write
    /// at `q` can only have created leaves at known paths when `q` itself is one.
    private var knownNonLeaves: Set<String> = []

    package init() {}

    /// The operations of `writes`, in order; throws for the first that cannot be stored (the
    /// transaction holding them must then change nothing).
    package static func operations(for writes: [StoredWrite]) throws(StoreError) -> [RowOperation] {
        var plan = RowPlan()
        var operations: [RowOperation] = []
        for write in writes { try plan.append(write, to: &operations) }
        return operations
    }

    /// Appends the operations of `write`, which follows the writes appended before in the same
    /// transaction.
    package mutating func append(_ write: StoredWrite, to operations: inout [RowOperation]) throws(StoreError) {
        try write.validatePath()
        if write.isPriorityWrite {
            let owner = (write.path.parent ?? .root).wireString
            let priority = write.node.leafValue.flatMap(Priority.init(leaf:))
            if let priority { try StoredValue.checkStorable(priority.leafValue, at: RowPath.priority(of: owner)) }
            operations.append(.setPriority(of: owner, text: priority.map { StoredValue.text(of: $0) }))
            return
        }
        let path = write.path.wireString
        if write.path.isEmpty {
            operations.append(.deleteAll)
        } else if !write.locationWasEmpty {
            // A leaf's row replaces the row at its path.
            if write.node.leafValue == nil { operations.append(.deleteRow(path)) }
            if !write.nothingBelowLocation { operations.append(.deleteBelow(path)) }
        }
        if write.node.isEmpty {
            operations.append(.pruneEmptyAncestors(of: path))
            return
        }
        deleteAncestorLeaves(of: write.path, rowPath: path, known: write.noLeafAbove, into: &operations)
        try appendRows(of: write.node, at: path, for: write, into: &operations)
    }

    /// A write below a leaf replaces the leaf. Ancestors' priority rows stay: a leaf that gains
    /// children keeps its priority. (A deletion below a leaf leaves the leaf alone.) Nothing to
    /// delete when the writer knows no ancestor holds a leaf (`noLeafAbove`).
    private mutating func deleteAncestorLeaves(
        of path: Path, rowPath: String, known noLeafAbove: Bool, into operations: inout [RowOperation]
    ) {
        // This write may leave a leaf at `rowPath`, which the set must then no longer promise.
        if knownNonLeaves.contains(rowPath) { knownNonLeaves.removeAll(keepingCapacity: true) }
        guard !path.isEmpty, !noLeafAbove else { return }
        var ancestor = ""
        for key in path.components.dropLast() {
            if knownNonLeaves.insert(ancestor).inserted { operations.append(.deleteRow(ancestor)) }
            ancestor = RowPath.child(key.string, of: ancestor)
        }
        if knownNonLeaves.insert(ancestor).inserted { operations.append(.deleteRow(ancestor)) }
    }

    /// A row per leaf and per priority of `node`, which lies at `rowPath` inside `write`.
    private func appendRows(
        of node: Node, at rowPath: String, for write: StoredWrite, into operations: inout [RowOperation]
    ) throws(StoreError) {
        if let priority = node.priority {
            try StoredValue.checkStorable(priority.leafValue, at: rowPath)
            operations.append(.upsert(path: RowPath.priority(of: rowPath), text: StoredValue.text(of: priority)))
        }
        if let leaf = node.leafValue {
            try StoredValue.checkStorable(leaf, at: rowPath)
            operations.append(.upsert(path: rowPath, text: StoredValue.text(of: leaf)))
            return
        }
        if let packed = node.packedText {
            operations.append(.upsert(path: rowPath, text: packed))
            return
        }
        for (key, child) in node.children {
            if let reason = StoredKey.problem(with: key) { throw write.childKeyError(key, reason) }
            try appendRows(of: child, at: RowPath.child(key.string, of: rowPath), for: write, into: &operations)
        }
    }
}
