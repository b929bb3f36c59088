import Dispatch
import Synchronization

/// Runs async PostgreSQL calls for the synchronous ``Persistence/ServerStore`` API, whose callers
/// are threads made for blocking: the commit queue's dispatch queue and NIO's blocking thread
/// pool. Never call it from Swift's cooperative pool, whose threads it would hold, nor from
/// `DispatchQueue.global()`, whose threads on Linux are that pool's.
///
/// A call that has not finished after `timeout` (PostgreSQL unreachable, every pooled connection
/// busy, a statement left unanswered) fails and the blocked thread comes back; the call is
/// cancelled and left to end on its own: a statement PostgresNIO never answers does not end when
/// cancelled (see ``PostgresStorage/untilClosed(_:_:_:)``).
enum Blocking {
    static func run<Value: Sendable>(
        operation: String = "a call", timeout: Duration = .seconds(15),
        _ body: @escaping @Sendable () async throws -> Value
    ) throws -> Value {
        let outcome = Mutex<Result<Value, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let call = Task {
            let result: Result<Value, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        guard finished.wait(timeout: deadline) == .success, let result = outcome.withLock({ $0 }) else {
            call.cancel()
            throw PostgresStoreError.timedOut(operation: operation, after: timeout)
        }
        return try result.get()
    }
}
