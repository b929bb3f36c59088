import Synchronization

/// The two moments of a write an app can wait for: saved on the device (with persistence on),
/// then acknowledged by the server. Writes restored after a restart have one too, in
/// ``Database/pendingWrites``.
///
/// ```swift
/// let write = ref.setValue(["text": "hello"])
/// if await write.isDurable { print("kept on the device") }
/// try await write.acknowledged            // the server has it (or throws why not)
/// ```
public final class WriteStatus: Sendable {
    /// The written location, `/` for the root.
    public let path: String

    private struct State {
        var durable: Bool?
        var outcome: Result<Void, DatabaseError>?
        var durableWaiters: [CheckedContinuation<Bool, Never>] = []
        var acknowledgedWaiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    init(path: String) { self.path = path }

    /// Whether the write is saved on the device, once that is known: `false` when persistence is
    /// off or failed, or the write was refused before it was saved.
    public var isDurable: Bool {
        get async {
            await withCheckedContinuation { continuation in
                let known = state.withLock { state -> Bool? in
                    if state.durable == nil { state.durableWaiters.append(continuation) }
                    return state.durable
                }
                if let known { continuation.resume(returning: known) }
            }
        }
    }

    /// Returns once the server acknowledged the write; throws the server's refusal, the app's
    /// mistake (an invalid value) or ``DatabaseError/writeCanceled``. Cancelling the waiting task
    /// ends the wait with `CancellationError`; the write itself goes on.
    public var acknowledged: Void {
        get async throws {
            let waiter = state.withLock { state in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let known = state.withLock { state -> Result<Void, any Error>? in
                        if let outcome = state.outcome { return outcome.mapError { $0 as any Error } }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.acknowledgedWaiters[waiter] = continuation
                        return nil
                    }
                    if let known { continuation.resume(with: known) }
                }
            } onCancel: {
                let continuation = state.withLock { $0.acknowledgedWaiters.removeValue(forKey: waiter) }
                continuation?.resume(throwing: CancellationError())
            }
        }
    }

    /// Whether the server answered (or the write was refused or canceled).
    public var isFinished: Bool { state.withLock { $0.outcome != nil } }

    func markDurable(_ durable: Bool) {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard state.durable == nil else { return [] }
            state.durable = durable
            defer { state.durableWaiters = [] }
            return state.durableWaiters
        }
        for waiter in waiters { waiter.resume(returning: durable) }
    }

    func finish(_ error: DatabaseError?) {
        let outcome: Result<Void, DatabaseError> = error.map { .failure($0) } ?? .success(())
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.acknowledgedWaiters = [:] }
            return Array(state.acknowledgedWaiters.values)
        }
        if error != nil { markDurable(false) }
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 as any Error }) }
    }
}
