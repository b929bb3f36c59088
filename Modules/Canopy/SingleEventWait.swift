import Synchronization

/// The wait of ``DatabaseQuery/observeSingleEventAndPreviousSiblingKey(of:)``: it ends once, with
/// the first event or with its task's cancellation, and then stops the listener.
final class SingleEventWait: Sendable {
    typealias Event = (DataSnapshot, String?)

    private struct State {
        var continuation: CheckedContinuation<Event, Never>?
        /// What the wait ended with before the continuation came.
        var early: Event?
        var stop: (@Sendable () -> Void)?
        var ended = false
    }

    private let state = Mutex(State())

    /// Takes the continuation to resume; `false` when the wait already ended (it is resumed now).
    func start(_ continuation: CheckedContinuation<Event, Never>) -> Bool {
        let early = state.withLock { state -> Event? in
            if state.early == nil { state.continuation = continuation }
            return state.early
        }
        guard let early else { return true }
        continuation.resume(returning: early)
        return false
    }

    /// Sets how to stop the listener: at once if the wait already ended.
    func setStop(_ stop: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state in
            if !state.ended { state.stop = stop }
            return state.ended
        }
        if ended { stop() }
    }

    /// Ends the wait with `event` (the first call only).
    func end(with event: Event) {
        let (continuation, stop) = state.withLock { state in
            guard !state.ended else { return (CheckedContinuation<Event, Never>?.none, (@Sendable () -> Void)?.none) }
            state.ended = true
            if state.continuation == nil { state.early = event }
            defer {
                state.continuation = nil
                state.stop = nil
            }
            return (state.continuation, state.stop)
        }
        continuation?.resume(returning: event)
        stop?()
    }
}
