import Synchronization

/// How long the sorted indexes that queries build on a node are kept.
///
/// A query ordered by priority, value or a child builds an index of the node's children on first
/// use, and every update derived from the node maintains it (O(log n) per index per write), so
/// that later queries are cheap. Indexes no query uses stop costing that: one unused for
/// ``unusedLifetime`` is not carried to the nodes later updates derive, and a node keeps at most
/// ``maxPerNode``, the one used least recently making room for a new one.
///
/// ```swift
/// IndexRetention.maxPerNode = 4              // a server sets these once, at start
/// IndexRetention.unusedLifetime = .seconds(30)
/// ```
public enum IndexRetention {
    // Atomics, not a lock: every update of a node with indexes reads the lifetime, from every thread.
    private static let maxPerNodeSetting = Atomic(8)
    private static let unusedLifetimeNanoseconds = Atomic<Int64>(60_000_000_000)

    /// Most indexes one node keeps (key order needs none). Default 8.
    public static var maxPerNode: Int {
        get { maxPerNodeSetting.load(ordering: .relaxed) }
        set { maxPerNodeSetting.store(max(1, newValue), ordering: .relaxed) }
    }

    /// How long an index no query used is kept. Default 60 s.
    public static var unusedLifetime: Duration {
        get { .nanoseconds(unusedLifetimeNanoseconds.load(ordering: .relaxed)) }
        set {
            let (seconds, attoseconds) = newValue.components
            unusedLifetimeNanoseconds.store(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, ordering: .relaxed)
        }
    }

    /// Moves this task's clock for index retention forward (tests of expiry, without waiting).
    @TaskLocal public static var clockOffset: Duration = .zero

    static func now() -> ContinuousClock.Instant {
        ContinuousClock.now + clockOffset
    }
}

/// A built index and when a query last used it.
struct BuiltIndex {
    var children: IndexedChildren
    var lastUsed: ContinuousClock.Instant
}
