import Logging
public import Persistence
import PostgresNIO
import Synchronization
public import Tree

/// One namespace in PostgreSQL, owned by this process under ``epoch`` (see ``PostgresStorage``).
///
/// Every commit is one round trip: `canopy_commit` renews this epoch's lease under the owner
/// row's lock and applies the batch's ``Persistence/RowOperation``s, or changes nothing and fails
/// with ``PostgresStoreError/fenced(namespace:epoch:)`` when another process took the namespace. A
/// write acknowledged after its commit can therefore never be lost to a takeover. While open, the
/// store renews its lease every third of ``PostgresStorage/leaseDuration``.
///
/// The ``Persistence/ServerStore`` calls block; they run on the commit queue's thread and NIO's
/// blocking pool, as SQLite's do.
public final class PostgresServerStore: ServerStore {
    public let namespace: String
    public let epoch: Int64
    private let storage: PostgresStorage
    private let renewal = Mutex<Task<Void, Never>?>(nil)

    init(namespace: String, epoch: Int64, storage: PostgresStorage) {
        self.namespace = namespace
        self.epoch = epoch
        self.storage = storage
        let interval = storage.leaseDuration / 3
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.renewLease()
            }
        }
        renewal.withLock { $0 = task }
    }

    deinit { renewal.withLock { $0 }?.cancel() }

    public func loadTree() throws(PostgresStoreError) -> Node {
        let (client, logger, namespace) = (storage.client, storage.logger, namespace)
        let rows: [(String, String)]
        do {
            rows = try Blocking.run {
                var rows: [(String, String)] = []
                for try await row in try await client.query(
                    "SELECT path, value FROM canopy_nodes WHERE ns = \(namespace) ORDER BY path", logger: logger
                ).decode((String, String).self) {
                    rows.append(row)
                }
                return rows
            }
        } catch {
            throw PostgresStorage.failure("loading namespace \"\(namespace)\"", error)
        }
        var loader = TreeLoader()
        for (path, value) in rows {
            do throws(TreeLoaderError) {
                try loader.add(path: path, value: value)
            } catch {
                throw .query(operation: "loading namespace \"\(namespace)\"", message: "unreadable row: \(error)")
            }
        }
        return loader.build()
    }

    public func commit(_ writes: [StoredWrite]) throws {
        let operations = try RowPlan.operations(for: writes)
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
        let (client, logger, namespace, epoch) = (storage.client, storage.logger, namespace, epoch)
        let lease = storage.leaseDuration.milliseconds
        let columns = (kinds, first, second)
        try run("committing \(writes.count) writes") {
            let (kinds, first, second) = columns
            try await client.query(
                """
                SELECT canopy_commit(\(namespace), \(epoch), \(lease), \(kinds), \(first), \(second))
                """,
                logger: logger
            ).consume()
        }
    }

    public func setting(_ name: String) throws(PostgresStoreError) -> JSONValue? {
        let (client, logger, namespace) = (storage.client, storage.logger, namespace)
        let text: String? = try run("reading setting \"\(name)\"") {
            for try await value in try await client.query(
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
            throw .query(operation: "reading setting \"\(name)\"", message: "unreadable value: \(error)")
        }
    }

    public func setSetting(_ name: String, _ value: JSONValue?) throws(PostgresStoreError) {
        let (client, logger, namespace, epoch) = (storage.client, storage.logger, namespace, epoch)
        let lease = storage.leaseDuration.milliseconds
        let text = value?.serialized()
        try run("writing setting \"\(name)\"") {
            try await client.query(
                "SELECT canopy_set_setting(\(namespace), \(epoch), \(lease), \(name), \(text))", logger: logger
            ).consume()
        }
    }

    /// Stops renewing and lets another process take the namespace at once.
    public func close() throws(PostgresStoreError) {
        renewal.withLock { $0 }?.cancel()
        let (client, logger, namespace, epoch) = (storage.client, storage.logger, namespace, epoch)
        try run("releasing namespace \"\(namespace)\"") {
            try await client.query(
                "UPDATE canopy_owner SET lease_until = now() WHERE ns = \(namespace) AND epoch = \(epoch)",
                logger: logger
            ).consume()
        }
    }

    /// Stops renewing the lease, as a process paused past it would; commits still renew it (and
    /// fail once another process took the namespace).
    public func suspendLeaseRenewal() {
        renewal.withLock { $0 }?.cancel()
    }

    private func renewLease() async {
        let lease = storage.leaseDuration.milliseconds
        do {
            try await storage.client.query(
                "SELECT canopy_fence(\(namespace), \(epoch), \(lease))", logger: storage.logger
            ).consume()
        } catch {
            storage.logger.error(
                "could not renew the lease of a namespace",
                metadata: ["namespace": "\(namespace)", "epoch": "\(epoch)", "error": "\(classify(error, "renewing"))"])
        }
    }

    /// Runs `body`, blocking, with PostgreSQL's errors turned into ``PostgresStoreError``s.
    @discardableResult
    private func run<Value: Sendable>(
        _ operation: String, _ body: @escaping @Sendable () async throws -> Value
    ) throws(PostgresStoreError) -> Value {
        do {
            return try Blocking.run(body)
        } catch {
            throw classify(error, operation)
        }
    }

    private func classify(_ error: any Error, _ operation: String) -> PostgresStoreError {
        if let error = error as? PSQLError, error.serverInfo?[.sqlState] == PostgresSchema.fencedState {
            return .fenced(namespace: namespace, epoch: epoch)
        }
        return PostgresStorage.failure(operation, error)
    }
}
