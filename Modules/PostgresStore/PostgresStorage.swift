public import Logging
import PostgresNIO
import Synchronization

/// A process's connection to the PostgreSQL store: one connection pool shared by every namespace
/// it serves, the schema brought up to date at start, and the namespaces opened as
/// ``PostgresServerStore``s, each owned by this process (`node`) under an epoch.
///
/// While it runs, the process holds an advisory lock named after its node on a connection of its
/// own (``nodeLockClass``). PostgreSQL releases it the moment that connection ends, so when the
/// process dies (`kill -9`) another may take its namespaces at once instead of waiting for their
/// leases to run out; and a second process cannot start under the same node name.
///
/// ```swift
/// let storage = PostgresStorage(
///     location: try PostgresLocation(url), node: "node1", host: "s-node1.example.com:9000", logger: logger)
/// let pool = Task { await storage.run() }
/// try await storage.prepare()                       // clear errors: unreachable, credentials, newer schema
/// let store = try storage.open("main")              // blocking: takes the namespace's lease
/// ```
public final class PostgresStorage: Sendable {
    public let location: PostgresLocation
    /// This process's name in `canopy_owner`: unique among running processes (see the node lock).
    public let node: String
    /// Where clients reach this process (`host[:port]`), told to clients redirected to it.
    public let host: String?
    /// How long a namespace stays this process's without a commit or a renewal.
    public let leaseDuration: Duration
    let client: PostgresClient
    let logger: Logger
    /// The connection holding this node's advisory lock, once ``prepare()`` took it.
    private let nodeLock = Mutex<PostgresConnection?>(nil)

    /// The first key of every node lock (`pg_advisory_lock(nodeLockClass, hashtext(node))`).
    public static let nodeLockClass: Int32 = 0x43_4E_50

    public init(
        location: PostgresLocation, node: String, host: String? = nil, leaseDuration: Duration = .seconds(5),
        logger: Logger
    ) {
        self.location = location
        self.node = node
        self.host = host
        self.leaseDuration = leaseDuration
        self.logger = logger
        self.client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
    }

    /// Runs the connection pool, and keeps the node lock taken (taking it again after PostgreSQL
    /// came back), until the task is cancelled; every other call needs it running. Cancelling it
    /// releases the node lock.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.keepNodeLock() }
        }
    }

    private func keepNodeLock() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled, let held = nodeLock.withLock({ $0 }), held.isClosed else { continue }
            nodeLock.withLock { $0 = nil }
            do {
                try await join()
                logger.notice("took the node lock again", metadata: ["node": "\(node)"])
            } catch {
                logger.error("could not take the node lock again", metadata: ["node": "\(node)", "error": "\(error)"])
                nodeLock.withLock { $0 = $0 ?? held }
            }
        }
        // Out of the cancelled task, whose cancellation would stop the close before it is sent.
        // Unlocked first: closing only asks PostgreSQL to end the session, which lets the lock go
        // a moment later, and a process started at once under this node name found it still held.
        if let held = nodeLock.withLock({ $0 }) {
            let (node, logger) = (node, logger)
            await Task {
                _ = try? await held.query(
                    "SELECT pg_advisory_unlock(\(Self.nodeLockClass), hashtext(\(node)))", logger: logger
                ).collect()
                try? await held.close()
            }.value
        }
    }

    /// Checks that PostgreSQL answers and runs the migrations this build knows and the database
    /// lacks, in one transaction (several processes starting at once take turns).
    public func prepare() async throws(PostgresStoreError) {
        let known = PostgresSchema.migrations.map(\.name)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: location.connectionConfiguration, id: 0, logger: logger)
        } catch {
            throw Self.connectionFailure(error, location: location)
        }
        do {
            try await Self.untilClosed(connection, "migrating") { [logger] in
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query("SELECT pg_advisory_xact_lock(7414967254187)", logger: logger).consume()
                    try await connection.query(
                        """
                        CREATE TABLE IF NOT EXISTS canopy_migrations (
                            name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                        """,
                        logger: logger
                    ).consume()
                    var applied: [String] = []
                    for try await name in try await connection.query(
                        "SELECT name FROM canopy_migrations ORDER BY applied_at, name", logger: logger
                    ).decode(String.self) {
                        applied.append(name)
                    }
                    if applied.contains(where: { !known.contains($0) }) {
                        throw PostgresStoreError.newerSchema(applied: applied, known: known)
                    }
                    for migration in PostgresSchema.migrations where !applied.contains(migration.name) {
                        for statement in migration.statements {
                            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).consume()
                        }
                        try await connection.query(
                            "INSERT INTO canopy_migrations (name) VALUES (\(migration.name))", logger: logger
                        ).consume()
                        logger.info("migrated the PostgreSQL store", metadata: ["migration": "\(migration.name)"])
                    }
                }
            }
        } catch {
            try? await connection.close()
            let cause = Self.cause(of: error)
            if let cause = cause as? PostgresStoreError { throw cause }
            throw Self.failure("migrating", cause)
        }
        try? await connection.close()
        if nodeLock.withLock({ $0.map { !$0.isClosed } ?? false }) { return }
        try await join()
    }

    /// Takes this node's lock on a connection of its own and records the node in `canopy_members`.
    /// Throws ``PostgresStoreError/nodeInUse(_:)`` when a running process has the same node name,
    /// ``PostgresStoreError/hostInUse(_:node:)`` when one advertises the same host.
    private func join() async throws(PostgresStoreError) {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: location.connectionConfiguration, id: 1, logger: logger)
        } catch {
            throw Self.connectionFailure(error, location: location)
        }
        let (node, host, logger) = (node, host, logger)
        do {
            try await Self.untilClosed(connection, "joining as node \"\(node)\"") {
                let lock = try await connection.query(
                    "SELECT pg_try_advisory_lock(\(Self.nodeLockClass), hashtext(\(node)))", logger: logger)
                var locked = false
                for try await value in lock.decode(Bool.self) { locked = value }
                guard locked else { throw PostgresStoreError.nodeInUse(node) }
                if let host {
                    let others = try await connection.query(
                        """
                        SELECT node FROM canopy_members WHERE host = \(host) AND node <> \(node)
                            AND NOT pg_try_advisory_xact_lock(\(Self.nodeLockClass), hashtext(node))
                        """,
                        logger: logger)
                    for try await other in others.decode(String.self) {
                        throw PostgresStoreError.hostInUse(host, node: other)
                    }
                }
                try await connection.query(
                    """
                    INSERT INTO canopy_members (node, host, joined_at) VALUES (\(node), \(host), now())
                    ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, joined_at = EXCLUDED.joined_at
                    """,
                    logger: logger
                ).consume()
            }
        } catch {
            try? await connection.close()
            throw Self.failure("joining as node \"\(node)\"", error)
        }
        nodeLock.withLock { $0 = connection }
    }

    /// Whether namespace `name` was ever written (it has an owner row). Blocks.
    public func namespaceExists(_ name: String) throws(PostgresStoreError) -> Bool {
        let operation = "looking up namespace \"\(name)\""
        do {
            return try Blocking.run(operation: operation) { [self] in
                try await withConnection(operation) { [logger] connection in
                    try await connection.query("SELECT 1 FROM canopy_owner WHERE ns = \(name)", logger: logger)
                        .collect().count > 0
                }
            }
        } catch {
            throw Self.failure(operation, error)
        }
    }

    /// Takes namespace `name` for this process (raising its epoch) and returns its store. Throws
    /// ``PostgresStoreError/ownedElsewhere(namespace:node:host:)`` while another running process
    /// holds its lease: one whose lease ran out, or whose node lock is free (it died), is taken
    /// over. Blocks.
    public func open(_ name: String) throws(PostgresStoreError) -> PostgresServerStore {
        let (logger, node, host) = (logger, node, host)
        let leaseMilliseconds = leaseDuration.milliseconds
        let operation = "taking namespace \"\(name)\""
        let sent = ContinuousClock.now
        let epoch: Int64?
        do {
            epoch = try Blocking.run(operation: operation) { [self] in
                try await withConnection(operation) { connection in
                    let rows = try await connection.query(
                        """
                        INSERT INTO canopy_owner (ns, node, host, epoch, lease_until)
                            VALUES (\(name), \(node), \(host), 1, now() + \(leaseMilliseconds) * interval '1 millisecond')
                        ON CONFLICT (ns) DO UPDATE SET node = EXCLUDED.node, host = EXCLUDED.host,
                            epoch = canopy_owner.epoch + 1, lease_until = EXCLUDED.lease_until
                        WHERE canopy_owner.lease_until < now() OR canopy_owner.node = EXCLUDED.node
                            OR pg_try_advisory_xact_lock(\(Self.nodeLockClass), hashtext(canopy_owner.node))
                        RETURNING epoch
                        """,
                        logger: logger)
                    for try await epoch in rows.decode(Int64.self) { return epoch }
                    return nil
                }
            }
        } catch {
            throw Self.failure(operation, error)
        }
        guard let epoch else {
            let owner = try? Blocking.run(operation: operation) { [self] in
                try await withConnection(operation) { connection in
                    try await Self.owner(of: name, on: connection, logger: logger)
                }
            }
            throw .ownedElsewhere(
                namespace: name, node: owner?.node ?? "another server", host: owner.flatMap { $0.host })
        }
        logger.info("took namespace", metadata: ["namespace": "\(name)", "epoch": "\(epoch)", "node": "\(node)"])
        return PostgresServerStore(namespace: name, epoch: epoch, storage: self, acquired: sent)
    }

    /// The error inside a failed transaction: the body's, or else what failed around it.
    static func cause(of error: any Error) -> any Error {
        guard let error = error as? PostgresTransactionError else { return error }
        return error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error
    }

    static func failure(_ operation: String, _ error: any Error) -> PostgresStoreError {
        let error = cause(of: error)
        if let error = error as? PostgresStoreError { return error }
        guard let error = error as? PSQLError else { return .query(operation: operation, message: "\(error)") }
        if let message = error.serverInfo?[.message] {
            return .query(operation: operation, message: message)
        }
        return .query(operation: operation, message: Self.reason(error))
    }

    static func connectionFailure(_ error: any Error, location: PostgresLocation) -> PostgresStoreError {
        guard let error = error as? PSQLError else {
            return .cannotConnect(url: location.description, reason: "\(error)")
        }
        if let message = error.serverInfo?[.message] {
            return .cannotConnect(url: location.description, reason: message)
        }
        return .cannotConnect(url: location.description, reason: reason(error))
    }

    /// What a client-side failure was, without the query text PSQLError's debug description holds.
    private static func reason(_ error: PSQLError) -> String {
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }
}

extension PostgresRowSequence {
    /// Reads the rest of the result: a statement's error only arrives with its rows, so a write is
    /// not known to have happened until its result was read.
    func consume() async throws {
        for try await _ in self {}
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
