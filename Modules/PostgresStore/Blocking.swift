import Dispatch
import Synchronization

/// Runs async PostgreSQL calls for the synchronous ``Persistence/ServerStore`` API, whose callers
/// are threads made for blocking: the commit queue's dispatch queue and NIO's blocking thread
/// pool. Never call it from Swift's cooperative pool, whose threads it would hold, nor from
/// `DispatchQueue.global()`, whose threads on Linux are that pool's.
///
/// A call that has not finished after `timeout` (PostgreSQL unreachable, every pooled connection
/// busy) is cancelled and fails, so that the blocked thread comes back.
enum Blocking {
    static func run<Value: Sendable>(
        operation: String = "a call", timeout: Duration = .seconds(15),
        _ body: @escaping @Sendable () async throws -> Value
    ) throws -> Value {
        let outcome = Mutex<Result<Value, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Task {
            let result: Result<Value, any Error>
            do {
                result = .success(
                    try await withThrowingTaskGroup(of: Value?.self) { group in
                        group.addTask { try await body() }
                        group.addTask {
                            try await Task.sleep(for: timeout)
                            return nil
                        }
                        defer { group.cancelAll() }
                        guard let first = try await group.next(), let value = first else {
                            throw PostgresStoreError.timedOut(operation: operation, after: timeout)
                        }
                        return value
                    })
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        finished.wait()
        guard let result = outcome.withLock({ $0 }) else {
            throw PostgresStoreError.query(operation: "a call", message: "finished without a result")
        }
        return try result.get()
    }
}
