import CanopyTesting
import Persistence
import ServerStorage
import Testing
import Tree

@testable import PostgresStore

/// The write ids the PostgreSQL store keeps: per namespace, committed in `canopy_commit`'s
/// transaction with the writes they record (so fenced with them), and read by whichever process
/// opens the namespace next, a new owner after a takeover included.
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled)) struct PostgresWriteIDTests {
    private static func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value
    {
        try await PostgresServerStoreTests.blocking(body)
    }

    static let device = StoredWriteIDs(
        client: "device", highest: 4_294_967_303,
        notApplied: [
            4_294_967_301: .refused(status: "permission_denied", message: "Permission denied"),
            4_294_967_302: .stale,
        ], seen: 1_000)
    static let tablet = StoredWriteIDs(
        client: "tablet", highest: 7, notApplied: [6: .refused(status: "invalid_data", message: "it's \"quoted\"")],
        seen: 2_000)

    @Test func writeIDsCommitWithTheirWritesAndTheNextOwnerReadsThem() async throws {
        try await withPostgresCluster { cluster in
            try await PostgresServerStoreTests.withStorage(cluster, node: "node1") { first in
                try await PostgresServerStoreTests.withStorage(cluster, node: "node2") { second in
                    let owner = try await Self.blocking { try first.open("counter") }
                    let elsewhere = try await Self.blocking { try first.open("elsewhere") }
                    try await Self.blocking {
                        try owner.commit(
                            [StoredWrite(path: "n", node: Node(.number(1)))], disconnects: [],
                            writeIDs: [.store(Self.device), .store(Self.tablet)])
                        try elsewhere.commit(
                            [StoredWrite(path: "n", node: Node(.number(9)))], disconnects: [],
                            writeIDs: [.store(StoredWriteIDs(client: "device", highest: 1, seen: 5))])
                    }
                    #expect(try await Self.blocking { try owner.storedWriteIDs() } == [Self.device, Self.tablet])
                    let later = StoredWriteIDs(
                        client: "device", highest: Self.device.highest + 1, notApplied: Self.device.notApplied,
                        seen: 3_000)
                    // Several changes of one client in one commit: the last counts.
                    try await Self.blocking {
                        try owner.commit(
                            [StoredWrite(path: "n", node: Node(.number(2)))], disconnects: [],
                            writeIDs: [.store(Self.device), .forget(client: "tablet"), .store(later)])
                    }

                    // The owner goes; node2 takes the namespace over and reads what it stored.
                    try await Self.blocking { try owner.close() }
                    let next = try await Self.blocking { try second.open("counter") }
                    #expect(next.epoch == owner.epoch + 1)
                    #expect(try await Self.blocking { try next.storedWriteIDs() } == [later])
                    #expect(
                        try await Self.blocking { try next.loadTree() }
                            == Node(children: [(ChildKey("n"), Node(.number(2)))]))
                    #expect(
                        try await Self.blocking { try elsewhere.storedWriteIDs() }
                            == [StoredWriteIDs(client: "device", highest: 1, seen: 5)], "namespaces are separate")
                }
            }
        }
    }

    /// A process that lost the namespace stores neither writes nor write ids; write ids alone
    /// (only refusals were answered) are fenced too.
    @Test func aFencedCommitStoresNeitherItsWritesNorItsWriteIDs() async throws {
        try await withPostgresCluster { cluster in
            try await PostgresServerStoreTests.withStorage(cluster, node: "node1") { first in
                try await PostgresServerStoreTests.withStorage(cluster, node: "node2") { second in
                    let old = try await Self.blocking { try first.open("fenced") }
                    try await Self.blocking {
                        try old.commit(
                            [StoredWrite(path: "v", node: Node(.number(1)))], disconnects: [],
                            writeIDs: [.store(Self.tablet)])
                    }
                    old.suspendLeaseRenewal()
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    let new = try await Self.blocking { try second.open("fenced") }
                    let late = StoredWriteIDs(client: "tablet", highest: 8, seen: 2_500)
                    await #expect(throws: StoreError.fenced(namespace: "fenced", epoch: old.epoch)) {
                        try await Self.blocking {
                            try old.commit(
                                [StoredWrite(path: "v", node: Node(.number(2)))], disconnects: [],
                                writeIDs: [.store(late)])
                        }
                    }
                    await #expect(throws: StoreError.fenced(namespace: "fenced", epoch: old.epoch)) {
                        try await Self.blocking { try old.commit([], disconnects: [], writeIDs: [.store(late)]) }
                    }
                    #expect(try await Self.blocking { try new.storedWriteIDs() } == [Self.tablet])
                    #expect(try await cluster.psql("SELECT highest FROM canopy_write_ids WHERE ns = 'fenced'") == "7")
                }
            }
        }
    }

    /// A database the previous version prepared (migrations `v1` and `v2`, with data) gains the
    /// table when a process of this version starts; its data stays as it was.
    @Test func aDatabaseOfThePreviousVersionGainsTheTable() async throws {
        try await withPostgresCluster { cluster in
            try await cluster.psql(
                "CREATE TABLE canopy_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            for migration in PostgresSchema.migrations.prefix(2) {
                for statement in migration.statements { try await cluster.psql(statement) }
                try await cluster.psql("INSERT INTO canopy_migrations (name) VALUES ('\(migration.name)')")
            }
            try await cluster.psql(
                """
                INSERT INTO canopy_owner (ns, node, epoch, lease_until) VALUES ('old', 'gone', 3, now());
                SELECT canopy_commit('old', 3, 5000, ARRAY['upsert'], ARRAY['users/ada/age'], ARRAY['36'])
                """)
            try await PostgresServerStoreTests.withStorage(cluster) { storage in
                #expect(
                    try await cluster.psql("SELECT string_agg(name, ',' ORDER BY name) FROM canopy_migrations")
                        == "v1,v2,v3,v4,v5-packed-records")
                let store = try await Self.blocking { try storage.open("old") }
                #expect(store.epoch == 4)
                #expect(
                    try await Self.blocking { try store.loadTree() }
                        == (try Node(json: ["users": ["ada": ["age": 36]]])))
                #expect(try await Self.blocking { try store.storedWriteIDs() } == [])
                try await Self.blocking {
                    try store.commit(
                        [StoredWrite(path: "users/ada/age", node: Node(.number(37)))], disconnects: [],
                        writeIDs: [.store(Self.device)])
                }
                #expect(try await Self.blocking { try store.storedWriteIDs() } == [Self.device])
            }
        }
    }

    /// A row that does not read back is left out (that client's resends run again); the rest load.
    @Test func anUnreadableRowIsLeftOut() async throws {
        try await withPostgresCluster { cluster in
            try await PostgresServerStoreTests.withStorage(cluster) { storage in
                let store = try await Self.blocking { try storage.open("damaged") }
                try await Self.blocking {
                    try store.commit(
                        [StoredWrite(path: "n", node: Node(.number(1)))], disconnects: [],
                        writeIDs: [.store(Self.tablet)])
                }
                try await cluster.psql(
                    """
                    INSERT INTO canopy_write_ids (ns, client, highest, not_applied, seen)
                        VALUES ('damaged', 'broken', 3, '{oops', 1)
                    """)
                #expect(try await Self.blocking { try store.storedWriteIDs() } == [Self.tablet])
            }
        }
    }
}
