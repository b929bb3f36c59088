import CanopyTesting
import Dispatch
import Logging
import Persistence
import Presence
import Query
import Rules
import ServerStorage
import Synchronization
import Testing
import Transport
import Tree

@testable import CanopyServer

/// A store that refuses every commit touching `broken`, as a full or failing disk would.
final class FailingStore: ServerStore {
    private let inner = InMemoryServerStore()

    /// What SQLite reports for a full disk.
    static func diskFull(_ operation: String) -> StoreError {
        .sqlite(file: "/data/test.sqlite", operation: operation, message: "DiskFull: database or disk is full")
    }

    func loadTree() -> Node { inner.loadTree() }

    func commit(_ writes: [StoredWrite]) throws(StoreError) {
        if writes.contains(where: { $0.path.front == "broken" }) { throw Self.diskFull("committing") }
        try inner.commit(writes)
    }

    func setting(_ name: String) -> JSONValue? { inner.setting(name) }
    func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError) {
        if value?.stringValue?.contains("broken") == true { throw Self.diskFull("writing setting \"\(name)\"") }
        inner.setSetting(name, value)
    }
}

/// Records what a listener is sent.
final class RecordingSubscriber: Subscriber {
    let subscriberID = 1
    let pushes = Mutex<[JSONValue]>([])
    func deliver(_ push: Push) { pushes.withLock { $0.append(push.data) } }
    func revoke(path: Path, params: QueryParams) {}
    func end() {}
}

struct StorageFailureTests {
    static func set(_ database: Database, _ path: Path, _ json: JSONValue) async -> WriteOutcome {
        await database.set(path, json: json, as: .admin)
    }

    /// Runs `body` with a database on `store` whose commit queue runs meanwhile.
    static func withDatabase<Store: ServerStore>(
        on store: Store, metrics: ServerMetrics = ServerMetrics(), maxUncommittedWrites: Int = .max,
        _ body: (Database, CommitQueue) async throws -> Void
    ) async throws {
        let logger = Logger(label: "test")
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        defer {
            queue.finish()
            committer.cancel()
        }
        let database = try Database(
            name: "test", store: store, commits: queue, metrics: metrics, logger: logger,
            maxUncommittedWrites: maxUncommittedWrites)
        try await body(database, queue)
    }

    /// Runs `body` with a database on a ``FailingStore`` whose commit queue runs meanwhile.
    static func withFailingDatabase(_ body: (Database, FailingStore) async throws -> Void) async throws {
        let store = FailingStore()
        try await withDatabase(on: store) { database, _ in try await body(database, store) }
    }

    @Test func aWriteTheStoreRefusesIsRolledBackInMemoryAndForListeners() async throws {
        try await Self.withFailingDatabase { database, _ in
            let listener = RecordingSubscriber()
            await database.listen(
                listener, path: "broken", params: .default, queryID: "default", tag: nil, hash: nil, caller: .admin)

            guard case .ok = await Self.set(database, "kept", 1) else { Issue.record("a good write failed"); return }
            guard case .rejected(let error) = await Self.set(database, "broken/x", 2) else {
                Issue.record("the store's failure was not reported")
                return
            }
            #expect(error.status == .storageError)

            // Memory goes back to what is durable; the good write stays.
            #expect(
                await eventually { await database.read("broken", params: .default, caller: .admin)?.isEmpty == true },
                "the refused write is still visible in memory")
            #expect(await database.read("kept", params: .default, caller: .admin) == Node(.number(1)))
            // The listen's first push is the location's value; pushes go out only once durable, so the
            // listener never saw 2; after the reload it is told the location's value again.
            #expect(listener.pushes.withLock { $0 } == [.null, .null])

            // Writes are accepted again once memory is back.
            guard case .ok = await Self.set(database, "kept", 3) else { Issue.record("writes stayed refused"); return }
        }
    }

    /// Rules are stored before they are used: rules the store refuses never take effect.
    @Test func rulesTheStoreRefusesDoNotTakeEffect() async throws {
        try await Self.withFailingDatabase { database, store in
            let good = #"{"rules": {".read": true, ".write": false}}"#
            let refused = #"{"rules": {"broken": {".read": false}}}"#
            for text in [good, refused] {
                let document = try RulesDocument(parsing: text)
                let stored = (try? await database.setRules(document, text: text)) != nil
                #expect(stored == (text == good))
            }
            #expect(await database.rulesText == good)
            #expect(await database.mayRead("x", params: .default, caller: .unauthenticated))
            let now = ServerValueContext(now: 0)
            #expect(await !database.maySet("x", to: Node(.bool(true)), caller: .unauthenticated, at: now))
            #expect(store.setting("rules") == .string(good))
        }
    }

    /// Writes applied after one the store refused were computed from it: they fail too, so the disk
    /// holds a prefix of what memory applied, and memory comes back to exactly that.
    @Test func writesAfterAFailedOneFailTooAndMemoryMatchesTheDisk() async throws {
        try await Self.withFailingDatabase { database, store in
            let outcomes = Mutex<[String: WriteOutcome]>([:])
            for (name, value) in [("kept", 1), ("broken/x", 2), ("after", 3)] {
                await database.set(Path(name), json: .number(Double(value)), as: .admin) { outcome in
                    outcomes.withLock { $0[name] = outcome }
                }
            }
            try #require(await eventually(interval: .milliseconds(5)) { outcomes.withLock { $0.count } >= 3 })
            let results = outcomes.withLock { $0 }
            #expect(results["kept"] == .ok(value: Node(.number(1))))
            for name in ["broken/x", "after"] {
                guard case .rejected(let error)? = results[name] else {
                    Issue.record("\(name): \(String(describing: results[name]))")
                    continue
                }
                #expect(error.status == .storageError)
                #expect(!error.message.contains("DiskFull"), "the client is told the store's internals: \(error)")
            }
            #expect(
                await eventually { await database.read("after", params: .default, caller: .admin)?.isEmpty == true },
                "a write that was never stored is still in memory")
            #expect(store.loadTree() == (try Node(json: ["kept": 1])))
            // Once memory matches the disk again, writes are stored again.
            #expect(
                await eventually {
                    if case .ok = await Self.set(database, "after", 4) { return true }
                    return false
                })
            #expect(store.loadTree() == (try Node(json: ["kept": 1, "after": 4])))
        }
    }
}

/// A store whose commits wait until ``release()``: a stalled disk.
final class StalledStore: ServerStore {
    private let inner = InMemoryServerStore()
    private let gate = DispatchSemaphore(value: 0)
    private let stalled = Atomic(true)

    func release() {
        stalled.store(false, ordering: .sequentiallyConsistent)
        gate.signal()
    }

    func loadTree() -> Node { inner.loadTree() }

    /// What the store holds once its commits returned.
    var committed: Node { inner.loadTree() }

    func commit(_ writes: [StoredWrite]) throws(StoreError) {
        if stalled.load(ordering: .sequentiallyConsistent) {
            gate.wait()
            gate.signal()
        }
        try inner.commit(writes)
    }

    func setting(_ name: String) -> JSONValue? { inner.setting(name) }
    func setSetting(_ name: String, _ value: JSONValue?) { inner.setSetting(name, value) }
}

struct StalledStoreTests {
    /// A database whose store stalls, five writes behind and at its limit of five: `body` gets it,
    /// its commit queue, the store (to release) and the five writes' outcomes to come.
    static func withDatabaseFiveWritesBehind(
        metrics: ServerMetrics = ServerMetrics(),
        _ body: (Database, CommitQueue, StalledStore, [Task<WriteOutcome, Never>]) async throws -> Void
    ) async throws {
        let store = StalledStore()
        // Whatever happens in `body`, the commit thread is not left waiting.
        defer { store.release() }
        try await StorageFailureTests.withDatabase(on: store, metrics: metrics, maxUncommittedWrites: 5) {
            database, queue in
            let accepted = (0..<5).map { index in
                Task { await StorageFailureTests.set(database, Path("w/\(index)"), .number(Double(index))) }
            }
            try await waitUntil("five writes waiting for the store") { queue.uncommittedWrites == 5 }
            try await body(database, queue, store, accepted)
        }
    }

    @Test func writesAreRefusedWhileTheStoreIsTooFarBehindAndAcceptedOnceItCatchesUp() async throws {
        let metrics = ServerMetrics()
        try await Self.withDatabaseFiveWritesBehind(metrics: metrics) { database, queue, store, accepted in
            // The store holds five writes it has not committed: the next is refused at once.
            guard case .rejected(let error) = await StorageFailureTests.set(database, "w/late", 1) else {
                Issue.record("a write was taken while the store was five writes behind")
                return
            }
            #expect(error.status == .unavailable)
            #expect(error.message == "the database is 5 writes behind its storage; retry shortly")
            #expect(metrics.exposition().contains(#"canopy_limit_trips_total{limit="uncommitted_writes"} 1"#))

            store.release()
            for task in accepted {
                guard case .ok = await task.value else {
                    Issue.record("a write taken before the stall was not stored")
                    return
                }
            }
            // The count drops once the committer finished reporting the batch.
            while queue.uncommittedWrites > 0 { try await Task.sleep(for: .milliseconds(5)) }
            guard case .ok = await StorageFailureTests.set(database, "w/late", 1) else {
                Issue.record("a write after the store caught up was refused")
                return
            }
            let stored = await database.read("w", params: .default, caller: .admin)
            #expect(stored.map { Array($0.children(in: .key)).count } == 6)
        }
    }

    /// A connection's onDisconnect writes run once, when it ends: refusing them because the store
    /// is behind would lose them (their record is removed with them), so they are taken anyway.
    @Test func onDisconnectWritesAreTakenWhileTheStoreIsTooFarBehind() async throws {
        try await Self.withDatabaseFiveWritesBehind { database, queue, store, accepted in
            guard case .rejected = await StorageFailureTests.set(database, "w/late", 1) else {
                Issue.record("a write was taken while the store was five writes behind")
                return
            }
            await database.run(
                DisconnectRecord(
                    operations: [
                        DisconnectOperation(path: "presence/ada", kind: .set(false)),
                        DisconnectOperation(path: "rooms/lobby", kind: .update(["ada": true])),
                    ], identity: .admin),
                session: nil)
            store.release()
            for task in accepted { _ = await task.value }
            while queue.uncommittedWrites > 0 { try await Task.sleep(for: .milliseconds(5)) }
            let committed = store.committed
            #expect(committed.child(at: "presence/ada").json() == false)
            #expect(committed.child(at: "rooms/lobby/ada").json() == true)
            #expect(committed.child(at: "w").json() == [0, 1, 2, 3, 4])
        }
    }
}
