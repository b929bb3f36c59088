/// What a snapshot's data rests on (as Firestore's `SnapshotMetadata`): whether the server has
/// confirmed it on the current connection, and whether it includes local writes the server has
/// not acknowledged.
///
/// ```swift
/// ref.observe(.value, includeMetadataChanges: true) { snapshot in
///     if snapshot.metadata.hasPendingWrites { print("saving…") } else { print("saved") }
/// }
/// ```
public struct SnapshotMetadata: Sendable, Hashable, CustomStringConvertible {
    /// True until the server's answer to the listen for this query (or to one covering it, at
    /// or above its location) has been applied on the current connection; true again once the
    /// connection is lost. A read of the device's copy (``DataSource/cache``, or offline) is from
    /// the cache unless such a listen is up to date.
    public let isFromCache: Bool
    /// Whether a local write the server has not acknowledged (or refused) yet is part of the data:
    /// one at the location, above it or below it.
    public let hasPendingWrites: Bool

    public init(isFromCache: Bool, hasPendingWrites: Bool) {
        self.isFromCache = isFromCache
        self.hasPendingWrites = hasPendingWrites
    }

    public var description: String {
        "SnapshotMetadata(isFromCache: \(isFromCache), hasPendingWrites: \(hasPendingWrites))"
    }
}
