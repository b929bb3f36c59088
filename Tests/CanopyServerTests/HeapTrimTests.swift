import CanopyTesting
import Logging
import Synchronization
import Testing

@testable import CanopyServer

/// Memory freed once a burst of bytes held for slow readers is over is given back to the system:
/// the budget says when a burst ended, once, and the trimmer trims.
struct HeapTrimTests {
    @Test func aBurstIsOverOnceTheTotalIsBackUnderAQuarterOfItsPeak() {
        let ended = Atomic(0)
        let budget = OutboundBudget(limit: 1 << 30) { ended.add(1, ordering: .relaxed) }
        let share = OutboundBudget.burstBytes / 4
        for id in 0..<4 { _ = budget.record(id, bytes: share) {} }
        budget.remove(0)
        budget.remove(1)
        #expect(ended.load(ordering: .relaxed) == 0, "half the peak is still held")
        // A reader that drains below the stall threshold leaves the budget too.
        _ = budget.record(2, bytes: 0) {}
        #expect(ended.load(ordering: .relaxed) == 1)
        budget.remove(3)
        #expect(ended.load(ordering: .relaxed) == 1, "one burst, reported once")

        // The next burst is reported again.
        for id in 10..<14 { _ = budget.record(id, bytes: share) {} }
        for id in 10..<14 { budget.remove(id) }
        #expect(ended.load(ordering: .relaxed) == 2)
    }

    @Test func readersHoldingLessThanABurstTogetherAreNoBurst() {
        let ended = Atomic(0)
        let budget = OutboundBudget(limit: 1 << 30) { ended.add(1, ordering: .relaxed) }
        for id in 0..<3 { _ = budget.record(id, bytes: OutboundBudget.burstBytes / 4) {} }
        for id in 0..<3 { budget.remove(id) }
        #expect(ended.load(ordering: .relaxed) == 0)
    }

    @Test func readersTheBudgetClosesEndTheBurstTheyMade() {
        let ended = Atomic(0)
        let closed = Atomic(0)
        let budget = OutboundBudget(limit: OutboundBudget.burstBytes) { ended.add(1, ordering: .relaxed) }
        // Past the limit, the readers stalled longest are closed: the total never stays at the
        // burst's size, but the burst happened.
        for id in 0..<5 {
            _ = budget.record(id, bytes: OutboundBudget.burstBytes / 4 + 1) { closed.add(1, ordering: .relaxed) }
        }
        #expect(closed.load(ordering: .relaxed) == 2)
        #expect(ended.load(ordering: .relaxed) == 0)
        for id in 0..<5 { budget.remove(id) }
        #expect(ended.load(ordering: .relaxed) == 1)
    }

    #if os(Linux)
    @Test func theTrimmerReadsTheResidentMemoryAndTrims() {
        let resident = HeapTrimmer.residentBytes()
        #expect(resident > 1_000_000, "resident memory read from /proc/self/statm: \(resident)")
        HeapTrimmer(logger: .init(label: "test")).trim()
    }
    #endif
}

/// A burst of large writes (an import's request bodies) is followed by one trim, once it is over.
struct LargeWriteTrimTests {
    @Test func callsInABurstEndInOneTrim() async {
        let trimmer = HeapTrimmer(delay: .milliseconds(50), logger: .init(label: "test"))
        for _ in 0..<5 { trimmer.trimSoon() }
        #expect(await eventually { trimmer.trimCount == 1 })
        trimmer.trimSoon()
        #expect(await eventually { trimmer.trimCount == 2 })
    }

    @Test func aLargeWriteIsFollowedByATrim() async throws {
        try await withTestServer { server in
            let trimmer = server.server.heapTrimmer
            let small = try await server.http(.PUT, "/small.json?ns=test&print=silent", body: #"{"a":1}"#)
            #expect(small.status == 204)
            let records = (0..<5000).map { #""r\#($0)":{"bio":"\#(String(repeating: "x", count: 200))"}"# }
            let body = "{" + records.joined(separator: ",") + "}"
            #expect(body.utf8.count >= HeapTrimmer.largeBodyBytes)
            let large = try await server.http(.PATCH, "/large.json?ns=test&print=silent", body: body)
            #expect(large.status == 204)
            #expect(await eventually { trimmer.trimCount == 1 })
        }
    }
}
