/// How much a committed write survives.
///
/// ```swift
/// let store = try SQLiteServerStore(path: "data/main.sqlite", durability: .normal)
/// ```
public enum Durability: Sendable, Hashable {
    /// Every commit is synced to the disk (SQLite `synchronous = FULL`, plus `fullfsync` on Apple
    /// platforms): a commit that returned survives a power loss. Costs one fsync per commit, so
    /// group writes with ``CommitQueue``.
    case full
    /// Commits reach the operating system but are not synced (SQLite `synchronous = NORMAL` in WAL
    /// mode): they survive a crash or SIGKILL of the process, but the last ones may be lost when the
    /// machine loses power or the kernel crashes.
    case normal
}
