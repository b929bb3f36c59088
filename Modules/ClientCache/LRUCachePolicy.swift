public import Persistence
public import Tree

/// When a client cache is over its size, and which tracked queries to evict then: the least
/// recently used inactive ones, a fifth of them at a time (at least one), and any beyond the
/// first ``maxInactiveQueries`` by use. Active queries (a listener or `keepSynced` holds them) are
/// never evicted, nor is data another remaining query holds.
///
/// ```swift
/// let policy = LRUCachePolicy(maxBytes: 10 * 1024 * 1024)
/// while policy.isOver(store.size, trackedQueries: queries.count) {
///     let plan = policy.plan(evictingFrom: queries)
///     if plan.isEmpty { break }
///     try store.evict(plan)
///     queries.removeAll { plan.evicted.contains($0) }
/// }
/// ```
public struct LRUCachePolicy: Sendable, Equatable {
    /// The bytes the cache and the pending writes are kept under (pending writes are never evicted).
    public var maxBytes: Int
    /// The share of inactive queries one round evicts.
    public var fractionEvictedPerRound: Double
    /// More tracked queries than this are evicted down to it, whatever their size.
    public var maxInactiveQueries: Int
    /// How many server updates go by between two size checks.
    public var serverUpdatesBetweenChecks: Int
    /// How many bytes the cache and the pending writes may grow by between two size checks, so
    /// that a few large updates are checked as soon as many small ones.
    public var bytesBetweenChecks: Int

    /// `bytesBetweenChecks` is a thirty-second of `maxBytes` unless given.
    public init(
        maxBytes: Int, fractionEvictedPerRound: Double = 0.2, maxInactiveQueries: Int = 1_000,
        serverUpdatesBetweenChecks: Int = 1_000, bytesBetweenChecks: Int? = nil
    ) {
        self.maxBytes = maxBytes
        self.fractionEvictedPerRound = fractionEvictedPerRound
        self.maxInactiveQueries = maxInactiveQueries
        self.serverUpdatesBetweenChecks = serverUpdatesBetweenChecks
        self.bytesBetweenChecks = bytesBetweenChecks ?? max(1, maxBytes / 32)
    }

    /// Whether a store of `size` tracking `trackedQueries` queries should evict some.
    public func isOver(_ size: ClientStoreSize, trackedQueries: Int) -> Bool {
        size.total > maxBytes || trackedQueries > maxInactiveQueries
    }

    /// The size of journal a store under this policy keeps: a sixteenth of ``maxBytes``
    /// (checkpointed when it holds that much, and cut back to it).
    public var journalLimitBytes: Int { max(64 * 1024, maxBytes / 16) }

    /// What the store's files may take at a check: a quarter more than ``maxBytes`` and the
    /// journal, plus what is never evicted. Rows that fill their pages badly take more on disk
    /// than they count, and past this a check gives free pages back, then evicts more. Between
    /// checks the files grow by about ``bytesBetweenChecks`` (twice that on disk at worst) and the
    /// journal by one more transaction, so they stay within 1.5 times ``maxBytes`` plus the
    /// pending writes and the kept data.
    public func diskAllowance(pendingWriteBytes: Int, keptBytes: Int) -> Int {
        maxBytes + maxBytes / 4 + journalLimitBytes + pendingWriteBytes + keptBytes
    }

    /// One round of eviction from `queries` (every tracked query, active or not).
    public func plan(evictingFrom queries: some Collection<TrackedQuery>) -> EvictionPlan {
        let inactive = queries.filter { !$0.isActive }.sorted { ($0.lastUse, $0.id) < ($1.lastUse, $1.id) }
        let share = Int((Double(inactive.count) * fractionEvictedPerRound).rounded(.down))
        let count = min(inactive.count, max(1, share, inactive.count - maxInactiveQueries))
        let evicted = Array(inactive.prefix(count))
        let evictedIDs = Set(evicted.map(\.id))
        let kept = queries.filter { !evictedIDs.contains($0.id) }.map(\.path)
        return EvictionPlan(evicted: evicted, kept: kept)
    }
}

/// Tracked queries to forget with their data, except what the kept locations hold.
public struct EvictionPlan: Sendable, Equatable {
    /// The queries to forget, least recently used first.
    public var evicted: [TrackedQuery]
    /// The locations of the queries that stay: their data stays too.
    public var kept: [Path]

    public init(evicted: [TrackedQuery], kept: [Path]) {
        self.evicted = evicted
        self.kept = kept
    }

    public var isEmpty: Bool { evicted.isEmpty }

    /// The locations whose data goes, each with the kept locations below it: an evicted query's
    /// location unless a kept one or another evicted one is at or above it.
    public var prunes: [(path: Path, keeping: [Path])] {
        let keptSet = Set(kept)
        let evictedSet = Set(evicted.map(\.path))
        func hasAncestor(of path: Path, in set: Set<Path>) -> Bool {
            var current: Path? = path
            while let location = current {
                if set.contains(location) { return true }
                current = location.parent
            }
            return false
        }
        let chosen = evictedSet.filter { path in
            !hasAncestor(of: path, in: keptSet) && !(path.parent.map { hasAncestor(of: $0, in: evictedSet) } ?? false)
        }
        // Each kept location below a chosen one, found by walking up from it: linear in the kept
        // locations and their depth, not in their number times the evicted ones.
        var keeping: [Path: [Path]] = [:]
        for path in keptSet {
            var current: Path? = path
            while let location = current {
                if chosen.contains(location) {
                    keeping[location, default: []].append(path)
                    break
                }
                current = location.parent
            }
        }
        return chosen.sorted().map { path in (path, keeping[path, default: []].sorted()) }
    }
}

extension ClientStore {
    /// Forgets the plan's queries, and their data except what kept queries hold. Costs what it
    /// removes (and the kept data below a removed location), not the size of the cache.
    public func evict(_ plan: EvictionPlan) throws(StoreError) {
        for query in plan.evicted { try deleteTrackedQuery(id: query.id) }
        for (path, keeping) in plan.prunes { try pruneServerCache(at: path, keeping: keeping) }
    }
}
