import Logging
public import Persistence
import PostgresNIO
public import ServerStorage
import Synchronization
public import Tree

/// One namespace in PostgreSQL, owned by this process under ``epoch`` (see ``PostgresStorage``).
///
/// Every commit is one round trip: `canopy_commit` renews this epoch's lease under the owner
/// row's lock and applies the batch's ``ServerStorage/RowOperation``s, or changes nothing and fails
/// with ``Persistence/StoreError/fenced(namespace:epoch:)`` when another process took the namespace. A
/// write acknowledged after its commit can therefore never be lost to a takeover. While open, the
/// store renews its lease every third of ``PostgresStorage/leaseDuration``.
///
/// The store steps down (see ``whenSteppedDown(_:)``) when a renewal or a commit finds the
/// namespace taken over, and also when it could not renew for the lease less a margin (``margin``)
/// by its own monotonic clock: it stops serving before another process may take over, so a paused
/// or partitioned process does not serve stale reads for long. After that every commit fails with
/// ``Persistence/StoreError/fenced(namespace:epoch:)`` without reaching PostgreSQL.
///
/// The ``ServerStorage/ServerStore`` calls block; they run on the commit queue's thread and NIO's
/// blocking pool, as SQLite's do. They throw ``Persistence/StoreError``s naming the namespace:
/// ``Persistence/StoreError/postgres(namespace:operation:message:)`` for a statement PostgreSQL
/// refused or a connection lost, ``Persistence/StoreError/timedOut(namespace:operation:after:)``
/// when it did not answer, ``Persistence/StoreError/corruptData(file:row:reason:)`` for a row that
/// does not decode.
public final class PostgresServerStore: ServerStore {
    public let namespace: String
    public let epoch: Int64
    private let storage: PostgresStorage
    private let renewal = Mutex<Task<Void, Never>?>(nil)
    private let watchdog = Mutex<Task<Void, Never>?>(nil)
    private let serving: Mutex<Serving>

    private struct Serving {
        /// When this process stops serving unless a renewal or commit moves it later.
        var until: ContinuousClock.Instant
        var steppedDown = false
        var handlers: [@Sendable () -> Void] = []
    }

    /// `acquired`: when the statement that took the lease was sent.
    init(namespace: String, epoch: Int64, storage: PostgresStorage, acquired: ContinuousClock.Instant) {
        self.namespace = namespace
        self.epoch = epoch
        self.storage = storage
        serving = Mutex(Serving(until: acquired + storage.leaseDuration - Self.margin(storage.leaseDuration)))
        let interval = storage.leaseDuration / 3
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.renewLease()
            }
        }
        renewal.withLock { $0 = task }
        let watching = Task { [weak self] in
            while !Task.isCancelled {
                guard let until = self?.serving.withLock({ $0.steppedDown ? nil : $0.until }) else { return }
                if ContinuousClock.now >= until {
                    self?.stepDown(reason: "could not renew its lease")
                    return
                }
                try? await Task.sleep(until: until)
            }
        }
        watchdog.withLock { $0 = watching }
    }

    deinit {
        renewal.withLock { $0 }?.cancel()
        watchdog.withLock { $0 }?.cancel()
    }

    /// How long before its lease ends a process that could not renew stops serving: a fifth of the
    /// lease, at most a second.
    public static func margin(_ leaseDuration: Duration) -> Duration {
        min(.seconds(1), leaseDuration / 5)
    }

    /// Whether this process still serves the namespace (it has not stepped down).
    public var isServing: Bool { serving.withLock { !$0.steppedDown } }

    /// Runs `handler` once when the store steps down (at once if it already has), on the thread
    /// that noticed. The server closes the namespace then, so that its clients reconnect to the new
    /// owner.
    public func whenSteppedDown(_ handler: @escaping @Sendable () -> Void) {
        let now = serving.withLock { serving in
            if serving.steppedDown { return true }
            serving.handlers.append(handler)
            return false
        }
        if now { handler() }
    }

    private func stepDown(reason: String) {
        let handlers = serving.withLock { serving -> [@Sendable () -> Void]? in
            guard !serving.steppedDown else { return nil }
            serving.steppedDown = true
            defer { serving.handlers = [] }
            return serving.handlers
        }
        guard let handlers else { return }
        renewal.withLock { $0 }?.cancel()
        watchdog.withLock { $0 }?.cancel()
        storage.logger.warning(
            "stepped down from a namespace",
            metadata: ["namespace": "\(namespace)", "epoch": "\(epoch)", "reason": "\(reason)"])
        for handler in handlers { handler() }
    }

    /// The lease runs until at least `sent` (when the statement renewing it was sent) plus the lease.
    private func renewed(at sent: ContinuousClock.Instant) {
        let until = sent + storage.leaseDuration - Self.margin(storage.leaseDuration)
        serving.withLock { serving in
            if !serving.steppedDown, until > serving.until { serving.until = until }
        }
    }

    public func loadTree() throws(StoreError) -> Node {
        let (storage, logger, namespace) = (storage, storage.logger, namespace)
        let operation = "loading the tree"
        let rows: [(String, String)]
        do {
            // Rows stream in at about half a million a second: the default 15 s would refuse a
            // namespace of a few million leaves.
            rows = try Blocking.run(operation: operation, timeout: .seconds(600)) {
                try await storage.withConnection(operation) { connection in
                    var rows: [(String, String)] = []
                    for try await row in try await connection.query(
                        "SELECT path, value FROM canopy_nodes WHERE ns = \(namespace) ORDER BY path", logger: logger
                    ).decode((String, String).self) {
                        rows.append(row)
                    }
                    return rows
                }
            }
        } catch {
            throw failure(error, operation)
        }
        var loader = TreeLoader()
        for (path, value) in rows {
            do throws(TreeLoaderError) {
                try loader.add(path: path, value: value)
            } catch {
                throw .corruptData(
                    file: storage.location.description, row: "canopy_nodes/\(namespace)/\(error.row)",
                    reason: "\(error.reason): \(error.value)")
            }
        }
        return loader.build()
    }

    public func commit(_ writes: [StoredWrite]) throws(StoreError) {
        try commit(writes, disconnects: [])
    }

    public var keepsDisconnectOperations: Bool { true }

    public func commit(_ writes: [StoredWrite], disconnects: [DisconnectChange]) throws(StoreError) {
        try commit(writes, disconnects: disconnects, writeIDs: [])
    }

    /// Commits `writes`, `disconnects` and `writeIDs` in one call of `canopy_commit`, fenced by
    /// this store's epoch: the record of the named writes that ran commits with them, or nothing
    /// does.
    public func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        let operations = Self.grouped(try RowPlan.operations(for: writes))
        var kinds: [String] = []
        var first: [String] = []
        var second: [String] = []
        kinds.reserveCapacity(operations.count)
        first.reserveCapacity(operations.count)
        second.reserveCapacity(operations.count)
        for operation in operations {
            let (kind, a, b): (String, String, String) =
                switch operation {
                case .deleteAll: ("delete_all", "", "")
                case .deleteRow(let path): ("delete_row", path, "")
                case .deleteBelow(let path): ("delete_below", path, "")
                case .pruneEmptyAncestors(let path): ("prune", path, "")
                case .setPriority(let path, let text): ("priority", path, text ?? "")
                case .upsert(let path, let text): ("upsert", path, text)
                }
            kinds.append(kind)
            first.append(a)
            second.append(b)
        }
        for change in disconnects {
            switch change {
            case .store(let stored):
                kinds.append("disconnect_store")
                first.append(stored.session)
                second.append(stored.operations.serialized())
            case .remove(let session):
                kinds.append("disconnect_remove")
                first.append(session)
                second.append("")
            }
        }
        // Stores before forgets, so each kind is one run (one statement); a client appears once.
        let latest = WriteIDChange.latest(writeIDs)
        for case .store(let ids) in latest {
            kinds.append("write_ids_store")
            first.append(ids.client)
            second.append(Self.json(ids))
        }
        for case .forget(let client) in latest {
            kinds.append("write_ids_forget")
            first.append(client)
            second.append("")
        }
        let (logger, namespace, epoch) = (storage.logger, namespace, epoch)
        let lease = storage.leaseDuration.milliseconds
        let columns = (kinds, first, second)
        try runFenced("committing \(writes.count) writes") { connection in
            let (kinds, first, second) = columns
            try await connection.query(
                """
                SELECT canopy_commit(\(namespace), \(epoch), \(lease), \(kinds), \(first), \(second))
                """,
                logger: logger
            ).consume()
        }
    }

    /// A ``ServerStorage/StoredWriteIDs`` as `canopy_commit`'s `write_ids_store` reads it.
    static func json(_ ids: StoredWriteIDs) -> String {
        let notApplied: JSONValue = ids.notAppliedText.map { .string($0) } ?? .null
        return JSONValue.object([
            "highest": .number(Double(ids.highest)), "seen": .number(Double(ids.seen)), "notApplied": notApplied,
        ]).serialized()
    }

    /// The write ids stored for the namespace, least recently seen client first: read by whichever
    /// process opens it, so that a new owner answers the resends of writes its predecessor ran. A
    /// row that does not read back is logged and left out (that client's resends run again).
    public func storedWriteIDs() throws(StoreError) -> [StoredWriteIDs] {
        let (storage, logger, namespace) = (storage, storage.logger, namespace)
        let operation = "reading the write ids"
        let rows: [(String, Int64, String?, Int64)]
        do {
            rows = try Blocking.run(operation: operation) {
                try await storage.withConnection(operation) { connection in
                    var rows: [(String, Int64, String?, Int64)] = []
                    for try await row in try await connection.query(
                        """
                        SELECT client, highest, not_applied, seen FROM canopy_write_ids WHERE ns = \(namespace)
                        ORDER BY seen, client
                        """,
                        logger: logger
                    ).decode((String, Int64, String?, Int64).self) {
                        rows.append(row)
                    }
                    return rows
                }
            }
        } catch {
            throw failure(error, operation)
        }
        return rows.compactMap { client, highest, text, seen in
            do throws(WriteIDsFormatError) {
                return StoredWriteIDs(
                    client: client, highest: Int(highest), notApplied: try StoredWriteIDs.notApplied(parsing: text),
                    seen: seen)
            } catch {
                logger.error(
                    "left out the unreadable write ids of a client; its resent writes run again",
                    metadata: ["namespace": "\(namespace)", "client": "\(client)", "reason": "\(error)"])
                return nil
            }
        }
    }

    public func storedDisconnects() throws(StoreError) -> [StoredDisconnect] {
        let (storage, logger, namespace) = (storage, storage.logger, namespace)
        let operation = "reading the onDisconnect operations"
        let rows: [(String, String)]
        do {
            rows = try Blocking.run(operation: operation) {
                try await storage.withConnection(operation) { connection in
                    var rows: [(String, String)] = []
                    for try await row in try await connection.query(
                        """
                        SELECT session, operations FROM canopy_disconnect WHERE ns = \(namespace)
                        ORDER BY created_at, session
                        """,
                        logger: logger
                    ).decode((String, String).self) {
                        rows.append(row)
                    }
                    return rows
                }
            }
        } catch {
            throw failure(error, operation)
        }
        // Text that does not parse is handed over as `null`: the server logs it and removes the row,
        // rather than meeting it again at every open.
        return rows.map { session, text in
            StoredDisconnect(session: session, operations: (try? JSONValue(parsing: text)) ?? .null)
        }
    }

    /// `operations` reordered so that `canopy_commit` applies them a run at a time: within each
    /// stretch between two operations that read what is stored (a prune, a priority, a delete of
    /// everything), the deletes of rows, then the deletes below paths, then the upserts. A stretch
    /// ends before a delete that would remove a row upserted earlier in it, so the result is the
    /// same as applying them one by one in order; a path upserted twice keeps its later value (the
    /// function's upsert of a run sees to that).
    ///
    /// A batch of independent leaf writes becomes three statements instead of three per write.
    static func grouped(_ operations: [RowOperation]) -> [RowOperation] {
        var result: [RowOperation] = []
        result.reserveCapacity(operations.count)
        var rows: [String] = []
        var belows: [String] = []
        var upserts: [RowOperation] = []
        var upserted: Set<String> = []
        var upsertedAncestors: Set<String> = []
        func flush() {
            result += rows.map { .deleteRow($0) }
            result += belows.map { .deleteBelow($0) }
            result += upserts
            rows = []
            belows = []
            upserts = []
            upserted = []
            upsertedAncestors = []
        }
        for operation in operations {
            switch operation {
            case .deleteRow(let path):
                if upserted.contains(path) { flush() }
                rows.append(path)
            case .deleteBelow(let path):
                if upsertedAncestors.contains(path) { flush() }
                belows.append(path)
            case .upsert(let path, _):
                upserts.append(operation)
                upserted.insert(path)
                var end = path.endIndex
                while let slash = path[..<end].lastIndex(of: "/") {
                    guard upsertedAncestors.insert(String(path[..<slash])).inserted else { break }
                    end = slash
                }
            case .deleteAll, .pruneEmptyAncestors, .setPriority:
                flush()
                result.append(operation)
            }
        }
        flush()
        return result
    }

    public func setting(_ name: String) throws(StoreError) -> JSONValue? {
        let (logger, namespace) = (storage.logger, namespace)
        let text: String? = try run("reading setting \"\(name)\"") { connection in
            for try await value in try await connection.query(
                "SELECT value FROM canopy_settings WHERE ns = \(namespace) AND name = \(name)", logger: logger
            ).decode(String.self) {
                return value
            }
            return nil
        }
        guard let text else { return nil }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw .corruptData(
                file: storage.location.description, row: "canopy_settings/\(namespace)/\(name)",
                reason: error.description)
        }
    }

    public func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError) {
        let (logger, namespace, epoch) = (storage.logger, namespace, epoch)
        let lease = storage.leaseDuration.milliseconds
        let text = value?.serialized()
        try runFenced("writing setting \"\(name)\"") { connection in
            try await connection.query(
                "SELECT canopy_set_setting(\(namespace), \(epoch), \(lease), \(name), \(text))", logger: logger
            ).consume()
        }
    }

    /// Stops renewing and lets another process take the namespace at once.
    public func close() throws(StoreError) {
        renewal.withLock { $0 }?.cancel()
        watchdog.withLock { $0 }?.cancel()
        let (logger, namespace, epoch) = (storage.logger, namespace, epoch)
        try run("releasing the namespace") { connection in
            try await connection.query(
                "UPDATE canopy_owner SET lease_until = now() WHERE ns = \(namespace) AND epoch = \(epoch)",
                logger: logger
            ).consume()
        }
    }

    /// Stops renewing the lease, as a process that cannot reach PostgreSQL would: commits still
    /// renew it (and fail once another process took the namespace), and without them the store
    /// steps down a ``margin(_:)`` before the lease ends.
    public func suspendLeaseRenewal() {
        renewal.withLock { $0 }?.cancel()
    }

    private func renewLease() async {
        let lease = storage.leaseDuration.milliseconds
        let sent = ContinuousClock.now
        let (storage, namespace, epoch) = (storage, namespace, epoch)
        let operation = "renewing the lease"
        do {
            // A renewal that takes longer than the lease is of no use, and one left unanswered
            // would stop the renewals for good.
            try await FirstOutcome.of(operation, within: storage.leaseDuration) {
                try await storage.withConnection(operation) { connection in
                    try await connection.query(
                        "SELECT canopy_fence(\(namespace), \(epoch), \(lease))", logger: storage.logger
                    ).consume()
                }
            }
            renewed(at: sent)
        } catch {
            // Renewals stop (the store closes or stepped down): nothing went wrong.
            if Task.isCancelled { return }
            let problem = failure(error, operation)
            if case .fenced = problem {
                stepDown(reason: "another server took the namespace over")
                return
            }
            storage.logger.error(
                "could not renew the lease of a namespace",
                metadata: ["namespace": "\(namespace)", "epoch": "\(epoch)", "error": "\(problem)"])
        }
    }

    /// ``run(_:_:)`` for a statement that writes under the lease: refused at once after stepping
    /// down, renewing the lease on success, and stepping down on any failure. Only a fenced failure
    /// says for sure that nothing was written; after a timeout or a lost connection the statement
    /// may still commit, so memory cannot be brought back to what PostgreSQL holds by reading it
    /// now. Opening the namespace again takes a higher epoch, which fences a statement still in
    /// flight, and then reads what PostgreSQL holds.
    private func runFenced(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Void
    ) throws(StoreError) {
        guard isServing else { throw .fenced(namespace: namespace, epoch: epoch) }
        let sent = ContinuousClock.now
        do {
            try run(operation, body)
        } catch {
            if case .fenced = error {
                stepDown(reason: "another server took the namespace over")
            } else {
                stepDown(reason: "\(operation) failed, its outcome unknown: \(error)")
            }
            throw error
        }
        renewed(at: sent)
    }

    /// Runs `body` on a pooled connection, blocking, with PostgreSQL's errors turned into
    /// ``Persistence/StoreError``s (see ``failure(_:_:)``).
    @discardableResult
    private func run<Value: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) throws(StoreError) -> Value {
        let storage = storage
        do {
            return try Blocking.run(operation: operation) { try await storage.withConnection(operation, body) }
        } catch {
            throw failure(error, operation)
        }
    }

    /// What `operation` on this namespace failed with, as a ``Persistence/StoreError``:
    /// ``Persistence/StoreError/fenced(namespace:epoch:)`` when `canopy_commit` or `canopy_fence`
    /// found the namespace taken over (its SQLSTATE), ``Persistence/StoreError/timedOut(namespace:operation:after:)``
    /// when PostgreSQL did not answer, and ``Persistence/StoreError/postgres(namespace:operation:message:)``
    /// for anything else (PostgreSQL's message, or what failed on the way to it).
    func failure(_ error: any Error, _ operation: String) -> StoreError {
        if let error = PostgresStorage.cause(of: error) as? PSQLError,
            error.serverInfo?[.sqlState] == PostgresSchema.fencedState
        {
            return .fenced(namespace: namespace, epoch: epoch)
        }
        switch PostgresStorage.failure(operation, error) {
        case .timedOut(let operation, let after):
            return .timedOut(namespace: namespace, operation: operation, after: after)
        case .query(let operation, let message):
            return .postgres(namespace: namespace, operation: operation, message: message)
        case let other:
            return .postgres(namespace: namespace, operation: operation, message: other.description)
        }
    }
}
