import CanopyTesting
import Logging
import Persistence
import PostgresNIO
import PostgresStore
import ServerStorage
import Testing
import Tree

/// What fails in an open namespace is a ``StoreError`` saying what and where, as in every server
/// store: a row that does not decode names the store, the namespace and the row; a statement
/// PostgreSQL refuses names the namespace, the operation and PostgreSQL's message; a statement it
/// does not answer is a time-out, its outcome unknown.
extension PostgresServerStoreTests {
    @Test func aRowThatDoesNotDecodeIsCorruptDataNamingTheNamespaceAndTheRow() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                let store = try await Self.blocking { try storage.open("damaged") }
                try await Self.blocking { try store.commit([StoredWrite(path: "a", node: Node(.number(1)))]) }
                try await cluster.psql(
                    """
                    INSERT INTO canopy_nodes (ns, path, value) VALUES ('damaged', 'b', 'oops');
                    INSERT INTO canopy_settings (ns, name, value) VALUES ('damaged', 'rules', '{oops');
                    """)
                let address = storage.location.description
                await #expect(
                    throws: StoreError.corruptData(
                        file: address, row: "canopy_nodes/damaged/b",
                        reason: "not a JSON boolean, finite number or string: oops")
                ) {
                    try await Self.blocking { try store.loadTree() }
                }
                await #expect {
                    try await Self.blocking { try store.setting("rules") }
                } throws: { error in
                    guard case .corruptData(address, "canopy_settings/damaged/rules", _)? = error as? StoreError else {
                        return false
                    }
                    return true
                }
                // Reading damaged data steps nothing down.
                #expect(store.isServing)
            }
        }
    }

    @Test func aStatementPostgreSQLRefusesNamesTheNamespaceAndTheOperation() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                let store = try await Self.blocking { try storage.open("refused") }
                try await cluster.psql(
                    #"ALTER TABLE canopy_nodes ADD CONSTRAINT nothing_forbidden CHECK (value <> '"forbidden"')"#)
                await #expect {
                    try await Self.blocking {
                        try store.commit([StoredWrite(path: "x", node: Node(.string("forbidden")))])
                    }
                } throws: { error in
                    guard case .postgres("refused", "committing 1 writes", let message)? = error as? StoreError else {
                        return false
                    }
                    // PostgreSQL's own message, the operation named once.
                    return message.hasPrefix(
                        #"new row for relation "canopy_nodes" violates check constraint "nothing_forbidden""#)
                }
                #expect(try await cluster.psql("SELECT count(*) FROM canopy_nodes") == "0")
                // The store cannot tell a refusal from a commit whose outcome is unknown: it steps down.
                #expect(!store.isServing)
            }
        }
    }

    /// PostgreSQL leaves the commit waiting (another transaction holds the namespace's owner row)
    /// past the store's 15 s: the commit fails as timed out, its outcome unknown, and the store
    /// steps down.
    @Test(.timeLimit(.minutes(2)))
    func aStatementPostgreSQLDoesNotAnswerIsATimeOut() async throws {
        try await withPostgresCluster { cluster in
            try await Self.withStorage(cluster) { storage in
                let store = try await Self.blocking { try storage.open("slow") }
                let holder = try await PostgresConnection.connect(
                    configuration: storage.location.connectionConfiguration, id: 99, logger: Self.logger)
                do {
                    for statement in ["BEGIN", "SELECT 1 FROM canopy_owner WHERE ns = 'slow' FOR UPDATE"] {
                        for try await _ in try await holder.query(
                            PostgresQuery(unsafeSQL: statement), logger: Self.logger)
                        {}
                    }
                    await #expect(
                        throws: StoreError.timedOut(
                            namespace: "slow", operation: "committing 1 writes", after: .seconds(15))
                    ) {
                        try await Self.blocking { try store.commit([StoredWrite(path: "x", node: Node(.number(1)))]) }
                    }
                    #expect(!store.isServing)
                    for try await _ in try await holder.query("ROLLBACK", logger: Self.logger) {}
                } catch {
                    try? await holder.close()
                    throw error
                }
                try await holder.close()
            }
        }
    }
}
