import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import Query
import Synchronization
import Tree

/// A REST event-stream listener: pushes become `put` / `patch` events relative to its location.
///
/// Events wait in a queue counted in bytes; when its client reads too slowly for the queue to stay
/// under `maxPendingBytes`, or the server's `budget` for slow readers needs room, no more events
/// are queued and `close` runs (once, with the limit), which closes the stream.
final class EventStreamSubscriber: Subscriber {
    let subscriberID = SubscriberIDs.make()
    let location: Path
    let events: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let maxPendingBytes: Int
    private let budget: OutboundBudget?
    private let close: @Sendable (ServerLimit) -> Void
    private let pending = Mutex(Pending())

    private struct Pending {
        var bytes = 0
        var closed = false
        var countsInBudget = false
    }

    init(
        location: Path, maxPendingBytes: Int = .max, budget: OutboundBudget? = nil,
        close: @escaping @Sendable (ServerLimit) -> Void = { _ in }
    ) {
        self.location = location
        self.maxPendingBytes = maxPendingBytes
        self.budget = budget
        self.close = close
        (events, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
    }

    /// Bytes of events queued and not yet taken by the stream's writer.
    var pendingBytes: Int { pending.withLock { $0.bytes } }

    /// The writer took `event` from the queue.
    func taken(_ event: String) {
        let (bytes, counts) = pending.withLock { pending in
            pending.bytes -= event.utf8.count
            return (pending.bytes, pending.countsInBudget)
        }
        if counts { recordInBudget(bytes) }
    }

    /// Counts the queue in the server's budget for slow readers while it holds enough to.
    private func recordInBudget(_ bytes: Int) {
        guard let budget else { return }
        let counts = budget.record(subscriberID, bytes: bytes) { [self] in closeOnce(.totalPendingOutboundBytes) }
        let closed = pending.withLock { pending in
            pending.countsInBudget = counts
            return pending.closed
        }
        // Closed meanwhile, perhaps after taking itself out of the budget: out again, for good
        // (the budget would keep the stream, and its queue, alive).
        if closed { budget.remove(subscriberID) }
    }

    private func closeOnce(_ limit: ServerLimit) {
        let first = pending.withLock { pending in
            defer { pending.closed = true }
            return !pending.closed
        }
        if first { close(limit) }
    }

    func deliver(_ push: Push) {
        let relative = location.contains(push.path) ? Path.relative(from: location, to: push.path) : .root
        let name = push.kind == .merge ? "patch" : "put"
        send(event: name, data: ["path": .string(relative.description), "data": push.data])
    }

    /// Permission to read was lost: `cancel`, and the stream ends.
    func revoke(path: Path, params: QueryParams) {
        send(event: "cancel", data: .null)
        finish()
    }

    func end() { finish() }

    func send(event: String, data: JSONValue) {
        let text = "event: \(event)\ndata: \(data.serialized())\n\n"
        let size = text.utf8.count
        let outcome = pending.withLock { pending -> (queue: Bool, overflowed: Bool, bytes: Int, counts: Bool) in
            guard !pending.closed else { return (false, false, 0, false) }
            guard pending.bytes + size <= maxPendingBytes else { return (false, true, 0, false) }
            pending.bytes += size
            return (true, false, pending.bytes, pending.countsInBudget)
        }
        if outcome.queue { continuation.yield(text) }
        if outcome.overflowed { closeOnce(.pendingOutboundBytes) }
        if outcome.queue, outcome.bytes > OutboundBudget.stallThreshold || outcome.counts {
            recordInBudget(outcome.bytes)
        }
    }

    /// The stream ended: it queues nothing more and no longer counts in the budget.
    func ended() {
        pending.withLock { $0.closed = true }
        budget?.remove(subscriberID)
    }

    func finish() { continuation.finish() }
}
