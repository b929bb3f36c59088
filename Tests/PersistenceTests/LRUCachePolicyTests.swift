import Foundation
import Testing
import Tree

@testable import ClientCache

/// Which tracked queries the client cache evicts, and what an eviction removes from the store.
struct LRUCachePolicyTests {
    static func query(_ id: Int, _ path: Path, lastUse: Double, active: Bool = false) -> TrackedQuery {
        TrackedQuery(
            id: id, path: path, queryIdentifier: "default", params: [:], lastUse: lastUse, isComplete: true,
            isActive: active)
    }

    @Test func aRoundEvictsTheLeastRecentlyUsedFifthOfTheInactiveQueriesAndAtLeastOne() {
        let policy = LRUCachePolicy(maxBytes: 1_000)
        // Ten inactive queries used in a shuffled order, and two active ones used longest ago.
        let uses = [7, 3, 9, 1, 5, 0, 8, 2, 6, 4]
        var queries = uses.enumerated().map {
            Self.query($0.offset, Path("q\($0.offset)"), lastUse: Double($0.element))
        }
        queries.append(Self.query(10, "live", lastUse: -1, active: true))
        queries.append(Self.query(11, "kept", lastUse: -2, active: true))
        let plan = policy.plan(evictingFrom: queries)
        #expect(plan.evicted.map(\.id) == [5, 3], "uses 0 and 1, the oldest two of ten")
        #expect(Set(plan.kept) == Set(queries.filter { ![5, 3].contains($0.id) }.map(\.path)))

        let few = [Self.query(0, "a", lastUse: 2), Self.query(1, "b", lastUse: 1)]
        #expect(policy.plan(evictingFrom: few).evicted.map(\.id) == [1])
        #expect(policy.plan(evictingFrom: [Self.query(0, "a", lastUse: 1, active: true)]).isEmpty)
    }

    @Test func queriesBeyondTheMaximumAreEvictedWhateverTheSize() {
        let policy = LRUCachePolicy(maxBytes: 1_000_000, maxInactiveQueries: 4)
        let queries = (0..<10).map { Self.query($0, Path("q\($0)"), lastUse: Double($0)) }
        #expect(policy.isOver(ClientStoreSize(serverCache: 10, pendingWrites: 0), trackedQueries: 10))
        #expect(!policy.isOver(ClientStoreSize(serverCache: 10, pendingWrites: 0), trackedQueries: 4))
        #expect(policy.plan(evictingFrom: queries).evicted.map(\.id) == [0, 1, 2, 3, 4, 5])
        // Pending writes count toward the size.
        #expect(policy.isOver(ClientStoreSize(serverCache: 600_000, pendingWrites: 600_000), trackedQueries: 1))
    }

    @Test func anEvictedLocationUnderAKeptOneStaysAndKeptLocationsBelowAnEvictedOneAreKept() {
        let plan = EvictionPlan(
            evicted: [
                Self.query(0, "rooms", lastUse: 0), Self.query(1, "rooms/r1/log", lastUse: 0),
                Self.query(2, "users/ada/notes", lastUse: 0),
            ],
            kept: ["rooms/r2", "users/ada", "other"])
        #expect(plan.prunes.map(\.path) == ["rooms"])
        #expect(plan.prunes.first?.keeping == ["rooms/r2"])
    }

    @Test func evictingRemovesTheQueriesAndTheirDataButNotWhatOtherQueriesHold() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            try store.overwriteServerCache(
                Node(json: ["r1": ["m": "old"], "r2": ["m": "recent"], "r3": ["m": "live"]]), at: "rooms")
            try store.overwriteServerCache(Node(json: ["name": "Ada"]), at: "users/ada")
            let queries = [
                Self.query(0, "rooms/r1", lastUse: 1), Self.query(1, "rooms/r2", lastUse: 2),
                Self.query(2, "rooms/r3", lastUse: 0, active: true), Self.query(3, "users/ada", lastUse: 0),
            ]
            for query in queries { try store.saveTrackedQuery(query) }
            try store.saveWrite(PersistedWrite(id: 1, path: "rooms/r1/m", isMerge: false, json: "mine"))
            let before = store.size

            let plan = LRUCachePolicy(maxBytes: 1, maxInactiveQueries: 1).plan(evictingFrom: queries)
            #expect(plan.evicted.map(\.id) == [3, 0], "two beyond the one inactive query kept, oldest first")
            try store.evict(plan)
            #expect(try store.serverCache(at: "rooms") == Node(json: ["r2": ["m": "recent"], "r3": ["m": "live"]]))
            #expect(try store.serverCache(at: "users") == .empty)
            #expect(try store.trackedQueries().map(\.id) == [1, 2])
            #expect(try store.writes().map(\.id) == [1], "pending writes are never evicted")
            #expect(store.size.serverCache < before.serverCache)
            #expect(store.size.pendingWrites == before.pendingWrites)
        }
    }
}
