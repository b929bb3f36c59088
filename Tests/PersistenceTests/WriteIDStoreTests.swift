import CanopyTesting
import Foundation
import GRDB
import Logging
import Persistence
import ServerStorage
import Synchronization
import Testing
import Tree

/// The write ids a store keeps (what the server remembers of the writes clients named, so that a
/// resend after a crash is answered from it): committed in the transaction of the writes they
/// record, or not at all, and read back when the store is opened again.
struct WriteIDStoreTests {
    private let logger = Logger(label: "canopy.tests.write-ids", factory: { _ in SwiftLogNoOpLogHandler() })

    static let device = StoredWriteIDs(
        client: "device", highest: 12,
        notApplied: [
            9: .refused(status: "permission_denied", message: "Permission denied"), 11: .stale,
            10: .refused(status: "invalid_data", message: "quotes \" and\nnewlines"),
        ], seen: 1_000)
    static let tablet = StoredWriteIDs(client: "tablet", highest: 4_294_967_303, seen: 2_000)

    @Test func writeIDsCommitWithTheirWritesAndReadBackAfterReopening() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit(
                [try StoredWrite("counter", 3)], disconnects: [], writeIDs: [.store(Self.device), .store(Self.tablet)])
            #expect(try store.storedWriteIDs() == [Self.device, Self.tablet])
            try store.close()

            let reopened = try SQLiteServerStore(path: file)
            #expect(try reopened.loadTree() == (try Node(json: ["counter": 3])))
            #expect(try reopened.storedWriteIDs() == [Self.device, Self.tablet], "least recently seen first")
            // A later commit replaces a client's record and forgets another.
            var later = Self.device
            later.highest = 14
            later.notApplied = [13: .stale]
            later.seen = 3_000
            try reopened.commit(
                [try StoredWrite("counter", 4)], disconnects: [], writeIDs: [.store(later), .forget(client: "tablet")])
            try reopened.close()
            #expect(try SQLiteServerStore(path: file).storedWriteIDs() == [later])
        }
    }

    @Test func aCommitThatFailsStoresNeitherItsWritesNorItsWriteIDs() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit([try StoredWrite("a", 1)], disconnects: [], writeIDs: [.store(Self.tablet)])
            var next = Self.tablet
            next.highest += 1
            // A key the store cannot hold makes the whole commit fail.
            let unstorable = StoredWrite(path: "b", node: Node(children: [(ChildKey("x\u{0}y"), Node(.number(1)))]))
            #expect(throws: StoreError.self) {
                try store.commit([try StoredWrite("a", 2), unstorable], disconnects: [], writeIDs: [.store(next)])
            }
            #expect(try store.loadTree() == (try Node(json: ["a": 1])))
            #expect(try store.storedWriteIDs() == [Self.tablet])
        }
    }

    /// Write ids alone (the writes were refused) are stored too when the store is called with them.
    @Test func writeIDsWithoutWritesAreStored() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit([], disconnects: [], writeIDs: [.store(Self.device)])
            #expect(try store.storedWriteIDs() == [Self.device])
            #expect(try store.loadTree() == .empty)
        }
    }

    /// A data file made by the previous version (migrations `v1` and `v2-quarantine`) opens with
    /// its data and gains the empty `write_ids` table.
    @Test func aFileOfThePreviousVersionOpensAndGainsTheTable() async throws {
        try await withStoreFile { file in
            try FileManager.default.createDirectory(
                atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path, withIntermediateDirectories: true)
            let old = try DatabaseQueue(path: file)
            var migrator = DatabaseMigrator()
            // The previous version's migrations, as it registered them.
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE nodes (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                        CREATE TABLE settings (name TEXT PRIMARY KEY NOT NULL, value TEXT);
                        """)
            }
            migrator.registerMigration("v2-quarantine") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE quarantine (
                            path TEXT NOT NULL, value TEXT NOT NULL, reason TEXT NOT NULL, quarantined_at REAL NOT NULL);
                        """)
            }
            try migrator.migrate(old)
            try await old.write { db in
                try db.execute(sql: "INSERT INTO nodes (path, value) VALUES ('users/ada/age', '36')")
                try db.execute(sql: #"INSERT INTO settings (name, value) VALUES ('rules', '"{}"')"#)
            }
            try old.close()

            let store = try SQLiteServerStore(path: file)
            #expect(try store.loadTree() == (try Node(json: ["users": ["ada": ["age": 36]]])))
            #expect(try store.setting("rules") == .string("{}"))
            #expect(try store.storedWriteIDs() == [])
            try store.commit([try StoredWrite("users/ada/age", 37)], disconnects: [], writeIDs: [.store(Self.device)])
            try store.close()
            let reopened = try SQLiteServerStore(path: file)
            #expect(try reopened.storedWriteIDs() == [Self.device])
            #expect(try reopened.loadTree() == (try Node(json: ["users": ["ada": ["age": 37]]])))
        }
    }

    /// A file a newer Canopy migrated (it may hold rows this build cannot read) is refused, saying
    /// so, instead of having those rows set aside.
    @Test func aFileOfANewerVersionIsRefused() async throws {
        try await withStoreFile { file in
            try SQLiteServerStore(path: file).close()
            let newer = try DatabaseQueue(path: file)
            try await newer.write { db in
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')")
            }
            try newer.close()
            let error = #expect(throws: StoreError.self) { try SQLiteServerStore(path: file) }
            #expect(
                "\(error.map { "\($0)" } ?? "")".contains("written by a newer Canopy"), "\(String(describing: error))")
        }
    }

    @Test func inMemoryKeepsWhatSQLiteKeeps() async throws {
        try await withStoreFile { file in
            let sqlite = try SQLiteServerStore(path: file)
            let memory = InMemoryServerStore()
            var later = Self.tablet
            later.seen = 500
            let commits: [[WriteIDChange]] = [
                [.store(Self.device), .store(Self.tablet)], [.forget(client: "device")], [.store(later)],
                [.forget(client: "nobody")],
            ]
            for changes in commits {
                try sqlite.commit([try StoredWrite("x", 1)], disconnects: [], writeIDs: changes)
                try memory.commit([try StoredWrite("x", 1)], disconnects: [], writeIDs: changes)
                #expect(try sqlite.storedWriteIDs() == memory.storedWriteIDs())
            }
            #expect(memory.storedWriteIDs() == [later])
        }
    }

    /// A deferred store (a namespace nobody wrote to) is not created for write ids alone, and keeps
    /// them once a write created it.
    @Test func aDeferredStoreIsCreatedByWritesNotByWriteIDsAlone() async throws {
        let created = Mutex(0)
        let store = DeferredServerStore {
            created.withLock { $0 += 1 }
            return InMemoryServerStore()
        }
        try store.commit([], disconnects: [], writeIDs: [.store(Self.device)])
        #expect(!store.isCreated)
        #expect(try store.storedWriteIDs() == [])
        try store.commit([try StoredWrite("a", 1)], disconnects: [], writeIDs: [.store(Self.tablet)])
        #expect(try store.storedWriteIDs() == [Self.tablet])
        #expect(created.withLock { $0 } == 1)
    }

    @Test func theLatestChangeOfEachClientIsKeptInOrder() {
        var later = Self.device
        later.highest = 20
        let changes: [WriteIDChange] = [
            .store(Self.device), .store(Self.tablet), .forget(client: "device"), .store(later), .forget(client: "x"),
        ]
        #expect(WriteIDChange.latest(changes) == [.store(Self.tablet), .store(later), .forget(client: "x")])
        #expect(WriteIDChange.latest([.store(Self.tablet)]) == [.store(Self.tablet)])
    }

    @Test func unreadableNotAppliedTextIsAnError() throws {
        #expect(throws: WriteIDsFormatError.self) { try StoredWriteIDs.notApplied(parsing: "[1]") }
        #expect(throws: WriteIDsFormatError.self) { try StoredWriteIDs.notApplied(parsing: #"{"x":"stale"}"#) }
        #expect(throws: WriteIDsFormatError.self) { try StoredWriteIDs.notApplied(parsing: #"{"1":{"status":3}}"#) }
        #expect(try StoredWriteIDs.notApplied(parsing: Self.device.notAppliedText) == Self.device.notApplied)
        #expect(try StoredWriteIDs.notApplied(parsing: nil) == [:])
    }

    // MARK: Through the commit queue

    /// Records what the queue hands the store; fails commits that write `fail`.
    private final class RecordingStore: ServerStore {
        let inner = InMemoryServerStore()
        let commits = Mutex<[(writes: [String], writeIDs: [String])]>([])

        func loadTree() -> Node { inner.loadTree() }
        func commit(_ writes: [StoredWrite]) throws(StoreError) {
            try commit(writes, disconnects: [], writeIDs: [])
        }
        func commit(
            _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
        ) throws(StoreError) {
            commits.withLock {
                $0.append((writes.map(\.path.description), writeIDs.map { "\($0.client)" }))
            }
            if writes.contains(where: { $0.path == "fail" }) {
                throw .sqlite(file: "recording", operation: "committing", message: "failed")
            }
            try inner.commit(writes, disconnects: disconnects, writeIDs: writeIDs)
        }
        func storedWriteIDs() -> [StoredWriteIDs] { inner.storedWriteIDs() }
        func setting(_ name: String) -> JSONValue? { inner.setting(name) }
        func setSetting(_ name: String, _ value: JSONValue?) { inner.setSetting(name, value) }
    }

    private static func ids(_ client: String, _ highest: Int) -> WriteIDChange {
        .store(StoredWriteIDs(client: client, highest: highest, seen: Int64(highest)))
    }

    /// The write ids of a batch that stores nothing else (only refusals were answered) cost no
    /// transaction: they commit with the next batch that stores writes, before anything later.
    @Test func writeIDsOfABatchWithoutWritesRideWithTheNextBatch() async throws {
        let store = RecordingStore()
        let queue = CommitQueue(store: store, logger: logger)
        // A setting is a batch of its own: the three submissions are three batches.
        queue.submit([], writeIDs: [Self.ids("refused", 1)]) { _ in }
        queue.submitSetting("rules", .string("{}")) { _ in }
        queue.submit([try StoredWrite("a", 1)], writeIDs: [Self.ids("writer", 1), Self.ids("refused", 2)]) { _ in }
        let committer = Task { await queue.run() }
        queue.finish()
        await committer.value
        let commits = store.commits.withLock { $0 }
        #expect(commits.map(\.writes) == [[], ["/a"]])
        #expect(commits.map(\.writeIDs) == [[], ["writer", "refused"]], "one change per client, the latest")
        #expect(store.storedWriteIDs().map(\.highest) == [1, 2])
    }

    /// The write ids of a batch that failed hold its writes as applied: they are not carried on.
    @Test func writeIDsOfAFailedBatchAreDropped() async throws {
        let store = RecordingStore()
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        let done = Mutex<[String]>([])
        @Sendable func record(_ result: Result<Void, StoreError>) {
            done.withLock { $0.append((try? result.get()) == nil ? "failed" : "stored") }
        }
        queue.submit([try StoredWrite("fail", 1)], writeIDs: [Self.ids("failed", 1)]) { record($0) }
        try #require(await eventually { done.withLock { $0.count } == 1 })
        queue.resume()
        queue.submit([try StoredWrite("b", 1)], writeIDs: [Self.ids("writer", 1)]) { record($0) }
        try #require(await eventually { done.withLock { $0.count } == 2 })
        queue.finish()
        await committer.value
        #expect(done.withLock { $0 } == ["failed", "stored"])
        #expect(store.commits.withLock { $0 }.map(\.writeIDs) == [["failed"], ["writer"]])
        #expect(store.storedWriteIDs().map(\.client) == ["writer"])
    }
}
