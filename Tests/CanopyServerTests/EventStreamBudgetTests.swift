import Testing
import Tree

@testable import CanopyServer

/// An event stream counts in the server's budget for slow readers only while it lasts.
struct EventStreamBudgetTests {
    @Test func anEndedStreamThatIsStillSentEventsNeitherCountsInTheBudgetNorIsKeptByIt() {
        let budget = OutboundBudget(limit: 1 << 30)
        var subscriber: EventStreamSubscriber? = EventStreamSubscriber(location: .root, budget: budget)
        weak let ended = subscriber
        let big = JSONValue.string(String(repeating: "x", count: 100_000))
        // Queued, and nobody takes it: the stream holds more than a reader that keeps up.
        subscriber?.send(event: "put", data: big)
        #expect(budget.total > 0)
        // The stream ends; its listener goes a moment later, and a write fanned out meanwhile
        // still reaches it.
        subscriber?.finish()
        subscriber?.ended()
        #expect(budget.total == 0)
        subscriber?.send(event: "put", data: big)
        #expect(budget.total == 0)
        subscriber = nil
        #expect(ended == nil, "the budget keeps the ended stream, and its queue, alive")
    }
}
