import Synchronization

/// An ordered buffer of received things that tests take from, waiting up to a deadline.
///
/// Arrivals go to the oldest waiter whose predicate accepts them, else into the buffer; a take
/// removes the first buffered element its predicate accepts, so a test can wait for one kind of
/// message (a response to request 7) and leave the others (pushes) for later takes.
public final class Inbox<Element: Sendable>: Sendable {
    private struct Waiter {
        let id: Int
        let accepts: @Sendable (Element) -> Bool
        let continuation: CheckedContinuation<Element?, Never>
    }

    private struct State {
        var buffer: [Element] = []
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var isFinished = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether ``finish()`` was called (the source ended).
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// The buffered elements, oldest first.
    public var buffered: [Element] { state.withLock { $0.buffer } }

    public func append(_ element: Element) {
        let waiter: Waiter? = state.withLock { state in
            if let index = state.waiters.firstIndex(where: { $0.accepts(element) }) {
                return state.waiters.remove(at: index)
            }
            state.buffer.append(element)
            return nil
        }
        waiter?.continuation.resume(returning: element)
    }

    /// Ends the source: waiters that could not be served get `nil`, now and later.
    public func finish() {
        let waiters = state.withLock { state in
            state.isFinished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    /// Removes and returns the first element `accepts` takes, waiting up to `timeout` for one;
    /// `nil` on timeout or when the source ended first.
    public func take(
        timeout: Duration, where accepts: @escaping @Sendable (Element) -> Bool = { _ in true }
    ) async -> Element? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
            let outcome: (element: Element?, waiterID: Int?) = state.withLock { state in
                if let index = state.buffer.firstIndex(where: accepts) {
                    return (state.buffer.remove(at: index), nil)
                }
                if state.isFinished { return (nil, nil) }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters.append(Waiter(id: id, accepts: accepts, continuation: continuation))
                return (nil, id)
            }
            guard let waiterID = outcome.waiterID else {
                continuation.resume(returning: outcome.element)
                return
            }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(waiterID)
            }
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state in
            state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(returning: nil)
    }
}
