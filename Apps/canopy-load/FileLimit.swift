#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The open-file limit (`RLIMIT_NOFILE`): every connection is a file descriptor, and the usual soft
/// limit of 1,024 stops a run long before 10,000 connections.
enum FileLimit {
    /// The soft and hard limits now.
    static var current: (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return (0, 0) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit (what an unprivileged process may do). Child
    /// processes the tool starts (canopy-server, redis-server) inherit it. Returns the soft limit
    /// now in force.
    @discardableResult
    static func raiseToHardLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
        return current.soft
    }

    /// Throws when `connections` descriptors (plus a margin for files, pipes and the event loops)
    /// do not fit under the soft limit.
    static func check(connections: Int, what: String) throws(LoadError) {
        let soft = current.soft
        let needed = UInt64(connections) + 64
        guard soft >= needed else { throw LoadError.fileLimit(what: what, needed: needed, limit: soft) }
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
