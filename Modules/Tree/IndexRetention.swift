/// How long the sorted indexes that queries build on a node are kept.
///
/// A query ordered by priority, value or a child builds an index of the node's children on first
/// use, and every update derived from the node maintains it (O(log n) per index per write), so
/// that later queries are cheap. Indexes no query uses stop costing that: one unused for
/// ``unusedLifetime`` is not carried to the nodes later updates derive, and a node keeps at most
/// ``maxPerNode``, the one used least recently making room for a new one.
///
/// The policy in force is ``current``, a task-local value: whoever queries and updates a tree binds
/// its own, so two servers in one process keep their own settings.
///
/// ```swift
/// let retention = IndexRetention(maxPerNode: 4, unusedLifetime: .seconds(30))
/// let updated = IndexRetention.$current.withValue(retention) { node.updating(at: path, to: value) }
/// ```
public struct IndexRetention: Sendable {
    /// Most indexes one node keeps (key order needs none). At least 1.
    public var maxPerNode: Int
    /// How long an index no query used is kept.
    public var unusedLifetime: Duration
    /// The clock index use is measured with (tests move it forward instead of waiting).
    public var now: @Sendable () -> ContinuousClock.Instant

    public init(
        maxPerNode: Int = 8, unusedLifetime: Duration = .seconds(60),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.maxPerNode = max(1, maxPerNode)
        self.unusedLifetime = unusedLifetime
        self.now = now
    }

    /// The policy queries and updates on this task follow; the defaults when none was bound.
    @TaskLocal public static var current = IndexRetention()
}

/// A built index and when a query last used it.
struct BuiltIndex {
    var children: IndexedChildren
    var lastUsed: ContinuousClock.Instant
}
