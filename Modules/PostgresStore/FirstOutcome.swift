import Synchronization

/// The first of several outcomes offered for one call; later ones are ignored.
///
/// PostgresNIO leaves some statements unanswered for good: one written to a pooled connection that
/// closed a moment before (PostgreSQL restarting) is dropped with its promise, and cancelling the
/// waiting task does not end it. A call that must come back races such a statement against a
/// deadline or the connection's closing, and leaves the loser running rather than waiting for it.
///
/// ```swift
/// let outcome = FirstOutcome<Int>()
/// Task { outcome.offer(.success(try await slowCall())) }
/// outcome.offer(.failure(TimeoutError()))   // whichever comes first is the answer
/// let value = try await outcome.value
/// ```
final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var outcome: Result<Value, any Error>?
        var waiter: CheckedContinuation<Value, any Error>?
    }

    private let state = Mutex(State())

    /// Records `outcome` unless one was recorded before, and resumes whoever waits.
    func offer(_ outcome: Result<Value, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: outcome)
    }

    /// The first outcome offered, once there is one (one waiter at a time).
    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { waiter in
                let ready = state.withLock { state -> Result<Value, any Error>? in
                    if let outcome = state.outcome { return outcome }
                    state.waiter = waiter
                    return nil
                }
                if let ready { waiter.resume(with: ready) }
            }
        }
    }

    /// Runs `body` in a task of its own and returns its outcome, or fails with
    /// ``PostgresStoreError/timedOut(operation:after:)`` once `timeout` has passed (or with
    /// `CancellationError` when the calling task is cancelled), cancelling `body` and not waiting
    /// for it to end.
    static func of(
        _ operation: String, within timeout: Duration, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let first = FirstOutcome()
        let work = Task {
            do {
                first.offer(.success(try await body()))
            } catch {
                first.offer(.failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            first.offer(.failure(PostgresStoreError.timedOut(operation: operation, after: timeout)))
        }
        defer {
            work.cancel()
            timer.cancel()
        }
        return try await withTaskCancellationHandler {
            try await first.value
        } onCancel: {
            first.offer(.failure(CancellationError()))
        }
    }
}
