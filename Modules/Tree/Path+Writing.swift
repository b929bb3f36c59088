extension Path {
    /// Throws unless data may be written at this location: `.info` (a client's connection state,
    /// never stored data) may not appear anywhere, `.priority` only as the last key, and the path is
    /// at most ``TreeLimits/maxDepth`` keys deep.
    ///
    /// ``Path/init(validating:)`` checks one path as a client spells it; this checks a location
    /// after paths were joined, as a multi-path update or an onDisconnect update joins its base with
    /// each member, so `a/.priority` joined with `x` is refused here.
    ///
    /// ```swift
    /// try Path("a/.priority").checkWritable()                 // fine: sets a's priority
    /// try Path("a").child(Path(".info/x")).checkWritable()     // throws invalidPath("a/.info/x", …)
    /// ```
    public func checkWritable() throws(TreeError) {
        if count > TreeLimits.maxDepth {
            throw .invalidPath(wireString, reason: "is \(count) levels deep (at most \(TreeLimits.maxDepth))")
        }
        for (offset, key) in components.enumerated() {
            if key == .info {
                throw .invalidPath(wireString, reason: ".info is read-only (it is not stored data)")
            }
            if key.isPriorityKey, offset != count - 1 {
                throw .invalidPath(wireString, reason: ".priority may only be the last key")
            }
        }
    }
}
