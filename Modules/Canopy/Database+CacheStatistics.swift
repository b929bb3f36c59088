extension Database {
    /// What the device's cache holds and what its files take, once what the client has to store
    /// so far is stored (it waits for that without blocking); `nil` with persistence off.
    ///
    /// ```swift
    /// if let cache = await database.cacheStatistics {
    ///     print("\(cache.bytesOnDisk) bytes on disk for a limit of \(cache.limitBytes)")
    /// }
    /// ```
    public var cacheStatistics: CacheStatistics? {
        get async { await repo?.persistence?.statistics() }
    }
}
