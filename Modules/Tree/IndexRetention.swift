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
    private static let settings = Mutex((maxPerNode: 8, unusedLifetime: Duration.seconds(60)))

    /// Most indexes one node keeps (key order needs none). Default 8.
    public static var maxPerNode: Int {
        get { settings.withLock { $0.maxPerNode } }
        set { settings.withLock { $0.maxPerNode = max(1, newValue) } }
    }

    /// How long an index no query used is kept. Default 60 s.
    public static var unusedLifetime: Duration {
        get { settings.withLock { $0.unusedLifetime } }
        set { settings.withLock { $0.unusedLifetime = newValue } }
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
