import CanopyTesting
import Dispatch
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import PostgresStore

/// A statement PostgresNIO never answers must not hold its caller: PostgresNIO drops a statement
/// written to a connection that has closed (each pooled connection closes when PostgreSQL
/// restarts, and the pool may hand one out before it noticed), and cancelling the waiting task does
/// not end it. A namespace's commit, or its close, waited for good on one (a cluster node stopped
/// serving its namespace until restarted).
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled)) struct PostgresUnansweredStatementTests {
    private static let logger = Logger(label: "canopy.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test(.timeLimit(.minutes(1)))
    func aStatementOnAConnectionThatClosedFailsAndThePoolGoesOn() async throws {
        try await withPostgresCluster { cluster in
            let storage = PostgresStorage(
                location: try PostgresLocation(cluster.url), node: "node1", logger: Self.logger)
            let pool = Task { await storage.run() }
            do {
                try await storage.prepare()
                // As when the pool hands out a connection whose server process has just gone.
                await #expect(
                    throws: PostgresStoreError.query(
                        operation: "probing", message: "the connection closed before PostgreSQL answered")
                ) {
                    try await storage.withConnection("probing") { connection in
                        try await connection.close()
                        try await connection.query("SELECT 1", logger: Self.logger).consume()
                    }
                }
                let answer = try await storage.withConnection("counting") { connection in
                    var count = 0
                    for try await value in try await connection.query("SELECT 41 + 1", logger: Self.logger)
                        .decode(Int.self)
                    {
                        count = value
                    }
                    return count
                }
                #expect(answer == 42, "the pool gave a working connection afterwards")
                // The store goes on using the pool.
                let store = try await Blocking.onThread { try storage.open("after") }
                #expect(store.isServing)
                try await Blocking.onThread { try store.close() }
            } catch {
                pool.cancel()
                await pool.value
                throw error
            }
            pool.cancel()
            await pool.value
        }
    }
}

/// ``Blocking`` gives its thread back when the call runs out of time, whether or not the call
/// heeds its cancellation.
@Suite struct BlockingTests {
    @Test(.timeLimit(.minutes(1)))
    func aCallThatNeverEndsTimesOutAndItsThreadComesBack() async throws {
        let gate = Gate()
        defer { gate.open() }
        await #expect(throws: PostgresStoreError.timedOut(operation: "waiting", after: .milliseconds(200))) {
            try await Blocking.onThread {
                try Blocking.run(operation: "waiting", timeout: .milliseconds(200)) { await gate.passed() }
            }
        }
    }

    @Test func aCallThatEndsInTimeGivesItsValueOrError() async throws {
        let value = try await Blocking.onThread { try Blocking.run(timeout: .seconds(30)) { 7 } }
        #expect(value == 7)
        await #expect(throws: PostgresStoreError.query(operation: "x", message: "y")) {
            try await Blocking.onThread {
                try Blocking.run(timeout: .seconds(30)) { () async throws -> Int in
                    throw PostgresStoreError.query(operation: "x", message: "y")
                }
            }
        }
    }
}

/// A wait that ignores cancellation, as a statement PostgresNIO dropped does, until opened.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func passed() async {
        await withCheckedContinuation { waiter in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(waiter) }
                return state.open
            }
            if open { waiter.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension Blocking {
    /// Runs `body` on a thread made for blocking (a serial dispatch queue's), as the server runs
    /// the store's calls.
    fileprivate static func onThread<Value: Sendable>(
        _ body: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "canopy.tests.blocking").async { continuation.resume(with: Result { try body() }) }
        }
    }
}
