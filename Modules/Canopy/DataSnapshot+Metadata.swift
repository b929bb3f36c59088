import Tree

extension DataSnapshot {
    /// Whether the data is confirmed by the server and whether it includes pending local writes.
    /// A child snapshot has pending writes only where one touches the child.
    public var metadata: SnapshotMetadata {
        SnapshotMetadata(isFromCache: isFromCache, hasPendingWrites: !pendingWrites.isEmpty)
    }

    /// The snapshot of `node`, the data at `relative` below this one, reached by `ref`.
    func child(ref: DatabaseReference, at relative: Path, node: Node) -> DataSnapshot {
        DataSnapshot(
            ref: ref, node: node, index: .priority, isFromCache: isFromCache,
            pendingWrites: pendingWrites.childWrite(at: relative))
    }
}
