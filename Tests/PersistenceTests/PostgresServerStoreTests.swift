import CanopyTesting
import Dispatch
import Foundation
import Logging
import Persistence
import PostgresStore
import ServerStorage
import Testing
import Tree

/// The PostgreSQL store against a real PostgreSQL (a private cluster per test): the same writes
/// give the same tree as every other store, migrations run once and refuse a newer schema, and a
/// process that lost a namespace's lease can never commit to it.
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled)) struct PostgresServerStoreTests {
    static let logger = Logger(label: "canopy.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The store's calls block: run them on a serial dispatch queue's thread, as the server runs
    /// them on the commit queue's. Not `DispatchQueue.global()`: on Linux its threads are Swift's
    /// cooperative pool, whose tasks the blocked call waits for.
    static func blocking<Value: Sendable>(
        _ body: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "canopy.tests.postgres.blocking").async {
                continuation.resume(with: Result { try body() })
            }
        }
    }

    /// A prepared storage for `node` on `cluster`, its pool running for the duration of `body`.
    static func withStorage<Value: Sendable>(
        _ cluster: PostgresTestCluster, node: String = "node1", host: String? = nil,
        leaseDuration: Duration = .seconds(5), _ body: (PostgresStorage) async throws -> Value
    ) async throws -> Value {
        let storage = PostgresStorage(
            location: try PostgresLocation(cluster.url), node: node, host: host, leaseDuration: leaseDuration,
            logger: logger)
        let pool = Task { await storage.run() }
        do {
            try await storage.prepare()
            let value = try await body(storage)
            pool.cancel()
            await pool.value
            return value
        } catch {
            pool.cancel()
            await pool.value
            throw error
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomWritesAgreeWithTheTreeAndSurviveReopening(seed: UInt64) async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                var generator = StoredWriteGenerator(random: SeededGenerator(seed: seed))
                let store = try await Self.blocking { try storage.open("equivalence") }
                var expected = Node.empty
                for step in 0..<150 {
                    var writes = (0..<Int.random(in: 1...3, using: &generator.random)).map { _ in generator.write() }
                    for index in writes.indices {
                        // As the server marks its writes; every third step as a writer that knows nothing.
                        // Packed nodes are widened either way.
                        if step % 3 != 0 {
                            writes[index].learn(from: expected)
                        } else {
                            writes[index].widenToPackedAncestor(in: expected)
                        }
                        expected = expected.updating(at: writes[index].path, to: writes[index].node)
                    }
                    let batch = writes
                    try await Self.blocking { try store.commit(batch) }
                    let stored = try await Self.blocking { try store.loadTree() }
                    #expect(
                        stored == expected, "seed \(seed) step \(step) after \(writes.map { "\($0.path)=\($0.node)" })")
                    if stored != expected { return }
                }
                try await Self.blocking { try store.close() }
                let reopened = try await Self.blocking { try storage.open("equivalence") }
                #expect(try await Self.blocking { try reopened.loadTree() } == expected)
                #expect(reopened.epoch == store.epoch + 1)
            }
        }
    }

    /// A batch of writes replacing several subtrees deletes the rows below each path in one
    /// statement (`canopy_commit`'s run of `delete_below`): every row below each path goes, and
    /// the rows of siblings whose keys sort next to it (`a-b`, `a,b`, `a0`) and of other paths stay.
    @Test func aBatchReplacingSeveralSubtreesDeletesOnlyTheRowsBelowEach() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                let store = try await Self.blocking { try storage.open("below") }
                let before: [StoredWrite] = try [
                    StoredWrite("a", ["x": 1, "y": ["z": 2]]), StoredWrite("a-b", 3), StoredWrite("a,b", 4),
                    StoredWrite("a0", 5), StoredWrite("b", ["c": 6, "d": ["e": 7, "f": 8]]), StoredWrite("bb/c", 9),
                    StoredWrite("c", 10),
                ]
                try await Self.blocking { try store.commit(before) }
                let replacing: [StoredWrite] = try [
                    StoredWrite("a", "new a"), StoredWrite("b/d", ["g": 11]), StoredWrite("c", ["h": 12]),
                ]
                try await Self.blocking { try store.commit(replacing) }
                let expected = try Node(json: [
                    "a": "new a", "a-b": 3, "a,b": 4, "a0": 5, "b": ["c": 6, "d": ["g": 11]], "bb": ["c": 9],
                    "c": ["h": 12],
                ])
                #expect(try await Self.blocking { try store.loadTree() } == expected)
                #expect(
                    try await cluster.psql(
                        "SELECT string_agg(path, ' ' ORDER BY path) FROM canopy_nodes WHERE ns = 'below'")
                        == "a a,b a-b a0 b/c b/d/g bb/c c/h")
            }
        }
    }

    @Test func namespacesAndSettingsAreSeparate() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                #expect(try await Self.blocking { try storage.namespaceExists("a") } == false)
                let a = try await Self.blocking { try storage.open("a") }
                let b = try await Self.blocking { try storage.open("b") }
                #expect(try await Self.blocking { try storage.namespaceExists("a") })
                try await Self.blocking {
                    try a.commit([StoredWrite(path: "x", node: Node(.number(1)))])
                    try b.commit([StoredWrite(path: "x/y", node: Node(.string("b")))])
                    try a.setSetting("rules", .object(["rules": .object([".read": .bool(true)])]))
                }
                #expect(
                    try await Self.blocking { try a.loadTree() } == Node(children: [(ChildKey("x"), Node(.number(1)))]))
                #expect(try await Self.blocking { try b.setting("rules") } == nil)
                #expect(
                    try await Self.blocking { try a.setting("rules") }
                        == .object(["rules": .object([".read": .bool(true)])]))
                try await Self.blocking { try a.setSetting("rules", nil) }
                #expect(try await Self.blocking { try a.setting("rules") } == nil)
            }
        }
    }

    @Test func aProcessThatLostTheLeaseCannotCommit() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node1") { first in
                try await Self.withStorage(cluster, node: "node2") { second in
                    let old = try await Self.blocking { try first.open("fenced") }
                    try await Self.blocking { try old.commit([StoredWrite(path: "v", node: Node(.number(1)))]) }

                    // While node1's lease runs, node2 cannot take the namespace.
                    await #expect(
                        throws: PostgresStoreError.ownedElsewhere(namespace: "fenced", node: "node1", host: nil)
                    ) {
                        try await Self.blocking { try second.open("fenced") }
                    }

                    // node1 pauses past its lease; node2 takes over with a higher epoch.
                    old.suspendLeaseRenewal()
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    let new = try await Self.blocking { try second.open("fenced") }
                    #expect(new.epoch == old.epoch + 1)

                    await #expect(throws: StoreError.fenced(namespace: "fenced", epoch: old.epoch)) {
                        try await Self.blocking { try old.commit([StoredWrite(path: "v", node: Node(.number(2)))]) }
                    }
                    await #expect(throws: StoreError.fenced(namespace: "fenced", epoch: old.epoch)) {
                        try await Self.blocking { try old.setSetting("rules", .string("{}")) }
                    }
                    try await Self.blocking { try new.commit([StoredWrite(path: "w", node: Node(.number(3)))]) }
                    #expect(
                        try await Self.blocking { try new.loadTree() }
                            == Node(children: [(ChildKey("v"), Node(.number(1))), (ChildKey("w"), Node(.number(3)))]))
                    #expect(try await cluster.psql("SELECT node, epoch FROM canopy_owner") == "node2|\(new.epoch)")

                    // Closing releases the lease: node1 may take the namespace back at once.
                    try await Self.blocking { try new.close() }
                    let back = try await Self.blocking { try first.open("fenced") }
                    #expect(back.epoch == new.epoch + 1)
                }
            }
        }
    }

    /// onDisconnect operations are kept per namespace and session, change in the transaction of
    /// the writes they are submitted with, and a process that lost the namespace changes none.
    @Test func onDisconnectOperationsCommitWithTheirWritesAndAreFenced() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node1") { first in
                try await Self.withStorage(cluster, node: "node2") { second in
                    let ada = StoredDisconnect(session: "ada", operations: ["operations": [["p": "a", "s": "gone"]]])
                    let bob = StoredDisconnect(session: "bob", operations: ["operations": []])
                    let old = try await Self.blocking { try first.open("presence") }
                    let other = try await Self.blocking { try first.open("elsewhere") }
                    #expect(old.keepsDisconnectOperations)
                    try await Self.blocking {
                        try old.commit([], disconnects: [.store(ada), .store(bob)])
                        try other.commit([], disconnects: [.store(bob)])
                    }
                    #expect(try await Self.blocking { try old.storedDisconnects() } == [ada, bob])

                    // Bob's operations ran: their writes and the removal commit together.
                    let write = StoredWrite(path: "b", node: Node(.string("offline")))
                    try await Self.blocking { try old.commit([write], disconnects: [.remove(session: "bob")]) }
                    #expect(try await Self.blocking { try old.storedDisconnects() } == [ada])
                    #expect(try await Self.blocking { try other.storedDisconnects() } == [bob])
                    #expect(
                        try await Self.blocking { try old.loadTree() }
                            == Node(children: [(ChildKey("b"), Node(.string("offline")))]))

                    // node1 lost the namespace: it can neither run Ada's operations nor drop them.
                    old.suspendLeaseRenewal()
                    try await cluster.psql(
                        "UPDATE canopy_owner SET lease_until = now() - interval '1 second' WHERE ns = 'presence'")
                    let new = try await Self.blocking { try second.open("presence") }
                    let ran = StoredWrite(path: "a", node: Node(.string("gone")))
                    await #expect(throws: StoreError.fenced(namespace: "presence", epoch: old.epoch)) {
                        try await Self.blocking { try old.commit([ran], disconnects: [.remove(session: "ada")]) }
                    }
                    #expect(try await Self.blocking { try new.storedDisconnects() } == [ada])
                    try await Self.blocking { try new.commit([ran], disconnects: [.remove(session: "ada")]) }
                    #expect(try await Self.blocking { try new.storedDisconnects() } == [])
                    #expect(try await cluster.psql("SELECT count(*) FROM canopy_disconnect") == "1")

                    // A row that does not parse comes back as null, for the server to drop.
                    try await cluster.psql(
                        "INSERT INTO canopy_disconnect (ns, session, operations) VALUES ('presence', 'cy', '{oops')")
                    #expect(
                        try await Self.blocking { try new.storedDisconnects() }
                            == [StoredDisconnect(session: "cy", operations: .null)])
                }
            }
        }
    }

    @Test func aLeaseIsRenewedWhileTheNamespaceIsOpen() async throws {
        try await withPostgresCluster { cluster in
            // Renewed every 2 s, and served until 1 s before the lease ends: a renewal late by 3 s (a
            // busy CI machine) would still hold it.
            try await Self.withStorage(cluster, node: "node1", host: "s-node1:9001", leaseDuration: .seconds(6)) {
                first in
                try await Self.withStorage(cluster, node: "node2") { second in
                    let store = try await Self.blocking { try first.open("renewed") }
                    try await Task.sleep(for: .seconds(13))
                    #expect(store.isServing)
                    await #expect(
                        throws: PostgresStoreError.ownedElsewhere(
                            namespace: "renewed", node: "node1", host: "s-node1:9001")
                    ) {
                        try await Self.blocking { try second.open("renewed") }
                    }
                    try await Self.blocking { try store.close() }
                    _ = try await Self.blocking { try second.open("renewed") }
                }
            }
        }
    }

    @Test func aStoreThatCannotRenewStepsDownBeforeItsLeaseEnds() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node1", leaseDuration: .seconds(2)) { storage in
                let store = try await Self.blocking { try storage.open("paused") }
                let steppedDown = Inbox<ContinuousClock.Instant>()
                store.whenSteppedDown { steppedDown.append(.now) }
                let suspended = ContinuousClock.now
                store.suspendLeaseRenewal()
                let when = await steppedDown.take(timeout: .seconds(30))
                #expect(when != nil, "still serving 30 s after its renewals stopped")
                // It stepped down on its own clock: PostgreSQL still has its lease (nobody fenced it).
                if let when { #expect(when - suspended <= .seconds(2)) }
                #expect(!store.isServing)
                #expect(
                    try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner") == "node1 \(store.epoch)")
                // Nothing more is committed, without asking PostgreSQL.
                await #expect(throws: StoreError.fenced(namespace: "paused", epoch: store.epoch)) {
                    try await Self.blocking { try store.commit([StoredWrite(path: "v", node: Node(.number(1)))]) }
                }
                #expect(try await cluster.psql("SELECT count(*) FROM canopy_nodes") == "0")
                let late = Inbox<Bool>()
                store.whenSteppedDown { late.append(true) }
                #expect(late.buffered == [true], "a handler added after the step-down runs at once")
            }
        }
    }

    @Test func aStoreTakenOverStepsDownAtItsNextRenewal() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node1", leaseDuration: .seconds(3)) { first in
                try await Self.withStorage(cluster, node: "node2") { second in
                    let old = try await Self.blocking { try first.open("taken") }
                    let steppedDown = Inbox<Bool>()
                    old.whenSteppedDown { steppedDown.append(true) }
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    let new = try await Self.blocking { try second.open("taken") }
                    #expect(await steppedDown.take(timeout: .seconds(20)) == true, "the old owner still serves")
                    #expect(!old.isServing && new.isServing)
                    try await Self.blocking { try new.commit([StoredWrite(path: "v", node: Node(.number(1)))]) }
                }
            }
        }
    }

    @Test func aDeadOwnersNamespaceIsTakenAtOnceAndALiveOnesIsNot() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node2", host: "s-node2:9002") { second in
                // node1 holds the namespace with a lease far from running out.
                let location = try PostgresLocation(cluster.url)
                let first = PostgresStorage(
                    location: location, node: "node1", host: "s-node1:9001", leaseDuration: .seconds(60),
                    logger: Self.logger)
                let running = Task { await first.run() }
                try await first.prepare()
                let store = try await Self.blocking { try first.open("orphan") }
                await #expect(
                    throws: PostgresStoreError.ownedElsewhere(namespace: "orphan", node: "node1", host: "s-node1:9001")
                ) {
                    try await Self.blocking { try second.open("orphan") }
                }
                // node1 dies: its connections end, and with them its node lock (released by its
                // backend as it exits, a moment after the connection closed).
                running.cancel()
                await running.value
                var taken: PostgresServerStore?
                for attempt in 0..<100 where taken == nil {
                    do {
                        taken = try await Self.blocking { try second.open("orphan") }
                    } catch PostgresStoreError.ownedElsewhere where attempt < 99 {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
                let new = try #require(taken)
                #expect(new.epoch == store.epoch + 1)
                #expect(
                    try await cluster.psql("SELECT node || ' ' || host FROM canopy_owner WHERE ns = 'orphan'")
                        == "node2 s-node2:9002")
            }
        }
    }

    /// A process that serves nothing (canopy-load watching a cluster) reads which node serves a
    /// namespace and under which epoch, and reading takes nothing.
    @Test func theOwnerOfANamespaceIsReadWithItsEpochByAProcessThatServesNothing() async throws {
        try await withPostgresCluster { cluster in
            let location = try PostgresLocation(cluster.url)
            try await Self.withStorage(cluster, node: "node1", host: "s-node1:9001") { first in
                try await Self.withStorage(cluster, node: "node2") { second in
                    #expect(try await PostgresStorage.owner(of: "watched", at: location, logger: Self.logger) == nil)
                    let store = try await Self.blocking { try first.open("watched") }
                    #expect(
                        try await PostgresStorage.owner(of: "watched", at: location, logger: Self.logger)
                            == NamespaceOwner(node: "node1", host: "s-node1:9001", epoch: store.epoch))

                    try await Self.blocking { try store.close() }
                    let taken = try await Self.blocking { try second.open("watched") }
                    #expect(taken.epoch == store.epoch + 1)
                    #expect(
                        try await PostgresStorage.owner(of: "watched", at: location, logger: Self.logger)
                            == NamespaceOwner(node: "node2", host: nil, epoch: taken.epoch))
                    // node2 still holds it.
                    await #expect(
                        throws: PostgresStoreError.ownedElsewhere(namespace: "watched", node: "node2", host: nil)
                    ) {
                        try await Self.blocking { try first.open("watched") }
                    }
                }
            }
        }
        let nowhere = try PostgresLocation("postgres://canopy@localhost:1/canopy?host=/nonexistent")
        await #expect {
            try await PostgresStorage.owner(of: "watched", at: nowhere, logger: Self.logger)
        } throws: { error in
            guard case .cannotConnect(let url, _)? = error as? PostgresStoreError else { return false }
            return url == "postgres://canopy@localhost:1/canopy?host=/nonexistent"
        }
    }

    @Test func aNodeNameOrHostARunningProcessHasIsRefusedAtStart() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster, node: "node1", host: "s-node1:9001") { _ in
                let location = try PostgresLocation(cluster.url)
                for (node, host, expected) in [
                    ("node1", "s-other:9009", PostgresStoreError.nodeInUse("node1")),
                    ("node2", "s-node1:9001", PostgresStoreError.hostInUse("s-node1:9001", node: "node1")),
                ] {
                    let storage = PostgresStorage(location: location, node: node, host: host, logger: Self.logger)
                    let pool = Task { await storage.run() }
                    await #expect(throws: expected) { try await storage.prepare() }
                    pool.cancel()
                    await pool.value
                }
            }
            // node1 stopped: its name and host are free again.
            try await Self.withStorage(cluster, node: "node2", host: "s-node1:9001") { _ in }
            try await Self.withStorage(cluster, node: "node1", host: "s-node1:9001") { _ in }
        }
    }

    @Test func migrationsRunOnceAndANewerSchemaIsRefused() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                try await storage.prepare()
                #expect(
                    try await cluster.psql("SELECT string_agg(name, ',' ORDER BY name) FROM canopy_migrations")
                        == "v1,v2,v3,v4,v5-packed-records")
                try await cluster.psql("INSERT INTO canopy_migrations (name) VALUES ('v9-from-the-future')")
                await #expect(
                    throws: PostgresStoreError.newerSchema(
                        applied: ["v1", "v2", "v3", "v4", "v5-packed-records", "v9-from-the-future"],
                        known: ["v1", "v2", "v3", "v4", "v5-packed-records"])
                ) {
                    try await storage.prepare()
                }
            }
        }
    }

    @Test func unreachableServersAndUnknownUsersAreClearErrors() async throws {
        try await withPostgresCluster { cluster in
            let unknownUser = cluster.url.replacingOccurrences(
                of: "postgres://postgres@", with: "postgres://nobody:pw@")
            let storage = PostgresStorage(
                location: try PostgresLocation(unknownUser), node: "n", logger: Self.logger)
            let pool = Task { await storage.run() }
            defer { pool.cancel() }
            do {
                try await storage.prepare()
                Issue.record("an unknown user was let in")
            } catch {
                #expect("\(error)".contains("role \"nobody\" does not exist"), "\(error)")
                #expect(!"\(error)".contains(":pw@"), "the password is shown: \(error)")
            }
        }
        let nowhere = PostgresStorage(
            location: try PostgresLocation("postgres://canopy@localhost:1/canopy?host=/nonexistent"), node: "n",
            logger: Self.logger)
        let pool = Task { await nowhere.run() }
        defer { pool.cancel() }
        await #expect {
            try await nowhere.prepare()
        } throws: { error in
            guard case .cannotConnect(let url, _)? = error as? PostgresStoreError else { return false }
            return url == "postgres://canopy@localhost:1/canopy?host=/nonexistent"
        }
    }
}
