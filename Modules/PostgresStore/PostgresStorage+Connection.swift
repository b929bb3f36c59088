import PostgresNIO
import Synchronization

extension PostgresStorage {
    /// How often a statement in flight checks that its connection is still open.
    static let closedConnectionCheck = Duration.milliseconds(100)

    /// Runs `body` on a connection of the pool (see ``untilClosed(_:_:_:)``).
    func withConnection<Value: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await client.withConnection { connection in
            try await Self.untilClosed(connection, operation) { try await body(connection) }
        }
    }

    /// Runs `body`'s statements on `connection`, failing as soon as the connection closes rather
    /// than waiting for an answer that may never come: PostgresNIO drops a statement written to a
    /// connection that closed a moment before (every pooled connection does when PostgreSQL
    /// restarts), and its caller would wait for good.
    ///
    /// When the caller stops waiting first (cancelled: a ``Blocking`` call ran out of time), the
    /// connection is closed, so that the pool does not hand out one with a statement still in flight.
    static func untilClosed<Value: Sendable>(
        _ connection: PostgresConnection, _ operation: String, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let first = FirstOutcome<Value>()
        let done = Atomic(false)
        let work = Task {
            let outcome: Result<Value, any Error>
            do {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            done.store(true, ordering: .releasing)
            first.offer(outcome)
        }
        let watcher = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: closedConnectionCheck)
                if connection.isClosed {
                    first.offer(
                        .failure(
                            PostgresStoreError.query(
                                operation: operation, message: "the connection closed before PostgreSQL answered")))
                    return
                }
            }
        }
        defer { watcher.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await first.value
            } onCancel: {
                first.offer(.failure(CancellationError()))
            }
        } catch {
            if !done.load(ordering: .acquiring) {
                work.cancel()
                if !connection.isClosed { Task { try? await connection.close() } }
            }
            throw error
        }
    }
}
