#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The open-file limit (`RLIMIT_NOFILE`): every connection is a file descriptor, and the usual soft
/// limit of 1,024 stops a run long before 10,000 connections. Child processes inherit it.
///
/// ```swift
/// let soft = FileLimit.raise(toAtLeast: 20_000)   // the soft limit now in force
/// ```
public enum FileLimit {
    /// The soft and hard limits now (both 0 when they cannot be read).
    public static var current: (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return (0, 0) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit (what an unprivileged process may do); returns the
    /// soft limit now in force.
    @discardableResult
    public static func raiseToHardLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
        return current.soft
    }

    /// Raises the soft limit to at least `needed` (and to the hard limit), raising the hard limit
    /// too where the process may (as root); returns the soft limit now in force, which is below
    /// `needed` when the hard limit could not be raised.
    @discardableResult
    public static func raise(toAtLeast needed: UInt64) -> UInt64 {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        guard UInt64(limit.rlim_cur) < needed else { return UInt64(limit.rlim_cur) }
        var raised = limit
        raised.rlim_cur = rlim_t(max(needed, UInt64(limit.rlim_max)))
        raised.rlim_max = max(raised.rlim_cur, limit.rlim_max)
        if setrlimit(resource, &raised) != 0 {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
        return current.soft
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
