import CanopyTesting
import Logging
import Persistence
import ServerStorage
import Synchronization
import Testing
import Transport
import Tree

@testable import CanopyServer

/// A store that lost its namespace to another process, as the PostgreSQL store does in cluster
/// mode: a commit holding a write under `moved` steps down (fires `signal`, as the store's
/// step-down handlers run before it throws) and is refused as fenced, writing nothing.
final class FencedStore: ServerStore {
    private let inner = InMemoryServerStore()
    let signal = StepDownSignal()

    func loadTree() -> Node { inner.loadTree() }

    func commit(_ writes: [StoredWrite]) throws(StoreError) {
        if writes.contains(where: { $0.path.front == "moved" }) {
            signal.fire()
            throw .fenced(namespace: "test", epoch: 1)
        }
        try inner.commit(writes)
    }

    func setting(_ name: String) -> JSONValue? { inner.setting(name) }
    func setSetting(_ name: String, _ value: JSONValue?) { inner.setSetting(name, value) }

    /// What the store holds.
    var stored: Node { inner.loadTree() }
}

struct FencedCommitTests {
    /// A write whose commit is fenced is answered as moved (sent again, to the new owner, it is
    /// stored there), not as a storage error; so is the write queued behind it, which the store
    /// that stepped down holds back. Neither is stored.
    @Test func aFencedCommitIsAMoveNotAStorageError() async throws {
        let store = FencedStore()
        let logger = Logger(label: "test")
        let queue = CommitQueue(store: store, logger: logger)
        let database = try Database(
            name: "test", store: store, commits: queue, metrics: ServerMetrics(), logger: logger,
            stepDown: store.signal)
        let outcomes = Mutex<[String: WriteOutcome]>([:])
        // Both submitted before the committer runs: one batch, the second held back after the first.
        for (name, value) in [("moved/x", 1), ("after", 2)] {
            await database.set(Path(name), json: .number(Double(value)), as: .admin) { outcome in
                outcomes.withLock { $0[name] = outcome }
            }
        }
        let committer = Task { await queue.run() }
        defer {
            queue.finish()
            committer.cancel()
        }
        try #require(await eventually(interval: .milliseconds(5)) { outcomes.withLock { $0.count } >= 2 })
        for (name, outcome) in outcomes.withLock({ $0 }) {
            guard case .rejected(let error) = outcome else {
                Issue.record("\(name): \(outcome)")
                continue
            }
            #expect(error.isMoved, "\(name): \(error)")
            #expect(error == .moved("test"), "\(name): \(error)")
        }
        #expect(store.signal.hasFired)
        #expect(store.stored == .empty)
    }

    /// How each store failure is told to the writer: the fenced commit of a namespace another
    /// process took over is a move, whatever came before it; a failure of the store's own is a
    /// storage error saying what failed, without the server's file names or the store's messages.
    @Test func aCommitFailureIsToldAsWhatTheStoreReported() {
        let moved = Database.commitFailure(.fenced(namespace: "main", epoch: 3), namespace: "main", lost: false)
        #expect(moved == .moved("main"))
        let halted = StoreError.haltedAfterFailure(reason: "an earlier write failed")
        #expect(Database.commitFailure(halted, namespace: "main", lost: true) == .moved("main"))
        #expect(Database.commitFailure(halted, namespace: "main", lost: false).status == .storageError)
        let cases: [(StoreError, String)] = [
            (
                .sqlite(file: "/data/main.sqlite", operation: "committing 1 write(s)", message: "disk I/O error"),
                "storage failed committing 1 write(s)"
            ),
            (
                .postgres(namespace: "main", operation: "committing 1 writes", message: "relation does not exist"),
                "storage failed committing 1 writes"
            ),
            (
                .timedOut(namespace: "main", operation: "committing 1 writes", after: .seconds(15)),
                "storage did not answer in time (committing 1 writes)"
            ),
            (.queueFinished, "the server is shutting down"),
        ]
        for (error, told) in cases {
            let answer = Database.commitFailure(error, namespace: "main", lost: false)
            #expect(answer.status == .storageError, "\(error)")
            #expect(answer.message == "the write could not be stored: \(told)", "\(error)")
            #expect(!answer.isMoved, "\(error)")
        }
    }
}
