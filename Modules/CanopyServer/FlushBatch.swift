import NIOCore
import Synchronization

/// A connection with frames queued, written when its loop gets to it.
protocol FlushTarget: AnyObject, Sendable {
    /// Writes what is queued (called on the connection's event loop).
    func flush()
}

/// The connections of one event loop that have frames to write, flushed together by one task on
/// that loop.
///
/// A write fanned out to thousands of listeners would otherwise schedule one task per connection
/// (a lock and often a wake-up of the loop each); this schedules one per loop.
final class FlushBatch: Sendable {
    private let eventLoop: any EventLoop
    private let state = Mutex(State())

    private struct State {
        var waiting: [any FlushTarget] = []
        var spare: [any FlushTarget] = []
        var scheduled = false
    }

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `target.flush()` on the loop, with the others scheduled before the loop gets to them.
    func schedule(_ target: any FlushTarget) {
        let start = state.withLock { state -> Bool in
            state.waiting.append(target)
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        if start { eventLoop.execute { self.run() } }
    }

    private func run() {
        var batch = state.withLock { state -> [any FlushTarget] in
            var batch: [any FlushTarget] = []
            swap(&batch, &state.spare)
            swap(&batch, &state.waiting)
            state.scheduled = false
            return batch
        }
        for target in batch { target.flush() }
        batch.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < batch.capacity { state.spare = batch }
        }
    }
}

/// One ``FlushBatch`` per event loop.
final class FlushBatches: Sendable {
    private let batches = Mutex<[ObjectIdentifier: FlushBatch]>([:])

    func batch(for eventLoop: any EventLoop) -> FlushBatch {
        batches.withLock { batches in
            let key = ObjectIdentifier(eventLoop)
            if let batch = batches[key] { return batch }
            let batch = FlushBatch(eventLoop: eventLoop)
            batches[key] = batch
            return batch
        }
    }
}
