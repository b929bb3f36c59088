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
