/// What the device's cache holds and what its files take, from ``Database/cacheStatistics``.
///
/// ``cachedBytes`` and ``pendingWriteBytes`` are the bytes of stored locations and JSON that
/// ``Database/persistenceCacheSizeBytes`` bounds (``limitBytes``): over it, queries nothing holds
/// are evicted with their data. ``keptBytes`` of the cached data is held by listeners and
/// `keepSynced(true)`, and is never evicted, nor are pending writes. On disk, the files stay within
/// about 1.5 times the limit plus the pending writes and the kept data.
///
/// ```swift
/// if let cache = await database.cacheStatistics {
///     let megabytes = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
///     label.text = "\(megabytes(cache.bytesOnDisk)) on disk, \(megabytes(cache.keptBytes)) kept, "
///         + "\(megabytes(cache.pendingWriteBytes)) waiting to be sent"
/// }
/// ```
public struct CacheStatistics: Sendable, Equatable, CustomStringConvertible {
    /// Cached server data.
    public var cachedBytes: Int
    /// Writes the server has not acknowledged yet; never evicted.
    public var pendingWriteBytes: Int
    /// The part of ``cachedBytes`` that active listeners and `keepSynced(true)` hold; never
    /// evicted while they do.
    public var keptBytes: Int
    /// What the database file and its write-ahead log take on disk now.
    public var bytesOnDisk: Int
    /// ``Database/persistenceCacheSizeBytes``.
    public var limitBytes: Int

    public init(cachedBytes: Int, pendingWriteBytes: Int, keptBytes: Int, bytesOnDisk: Int, limitBytes: Int) {
        self.cachedBytes = cachedBytes
        self.pendingWriteBytes = pendingWriteBytes
        self.keptBytes = keptBytes
        self.bytesOnDisk = bytesOnDisk
        self.limitBytes = limitBytes
    }

    public var description: String {
        "\(cachedBytes) bytes cached (\(keptBytes) kept), \(pendingWriteBytes) in pending writes, "
            + "\(bytesOnDisk) on disk, limit \(limitBytes)"
    }
}
