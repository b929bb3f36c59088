import Foundation
import Logging
import NIOPosix
import Persistence
import PostgresStore
import Prometheus
import ServerStorage
import ServiceLifecycle
import Tree

/// The server's open namespaces: opened on use, closed when idle, bounded in number.
///
/// Every user of a database (a realtime connection, an event stream, a REST request) holds a
/// ``DatabaseLease`` while it uses it; a namespace without leases for
/// ``ServerConfiguration/namespaceIdleTimeout`` is closed, and when
/// ``ServerConfiguration/maxOpenNamespaces`` are open the one unused for the longest makes room.
/// A namespace whose file does not exist is opened on a ``DeferredServerStore``: reading it creates
/// nothing, and the first write creates the file (when ``ServerConfiguration/createsNamespacesOnWrite``).
/// In PostgreSQL every open takes the namespace's lease first, for a read or a listen as for a write:
/// a process serves only the namespaces it holds, and sends the clients of the others to their owner.
///
/// Opening runs on NIO's blocking thread pool (SQLite opens the file and the whole tree is read),
/// so a large namespace that opens delays only its own clients.
actor DatabaseRegistry {
    private var open: [String: OpenNamespace] = [:]
    private var opening: [String: Task<Result<OpenNamespace, LookupError>, Never>] = [:]
    private var closing: [String: Task<Void, Never>] = [:]
    private var isShuttingDown = false
    private let configuration: ServerConfiguration
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Rules given at start (`--rules`), applied to each database as it opens.
    private var startupRules: StartupRules?
    /// Where namespaces live with ``ServerConfiguration/postgresURL``.
    private var postgres: PostgresStorage?
    /// Told of a database whose namespace another server took over, to close its connections.
    private var steppedDown: (@Sendable (Database) -> Void)?

    init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// Applies `rules` to every database opened from now on (before any is, at start).
    func useRules(_ rules: StartupRules) {
        startupRules = rules
    }

    /// Keeps namespaces opened from now on in PostgreSQL (before any is, at start); `steppedDown`
    /// is told of each database that stops serving because another server took its namespace.
    func usePostgres(_ storage: PostgresStorage, steppedDown: @escaping @Sendable (Database) -> Void) {
        postgres = storage
        self.steppedDown = steppedDown
    }

    /// Whether `name` can name a database: 1–63 of `a-z`, `0-9`, `-`, `_`.
    nonisolated static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
    }

    enum LookupError: Error, Sendable {
        case invalidName(String)
        /// No such namespace, and writes do not create namespaces.
        case unknown(String)
        case storage(String)
        /// ``ServerConfiguration/maxOpenNamespaces`` are open and each is in use.
        case tooManyOpen(limit: Int)
        /// Another server process holds the namespace's lease in PostgreSQL; clients reach it at
        /// `host` when it advertises one.
        case servedElsewhere(String, node: String, host: String?)
        /// The server is stopping: namespaces that are not open stay closed.
        case shuttingDown
    }

    /// Namespaces open now.
    var openCount: Int { open.count }

    /// The names of the namespaces open now.
    var openNames: [String] { Array(open.keys) }

    /// The namespaces the store holds, with their owner in a cluster (`nil` otherwise): the files of
    /// the data folder, or the namespaces of PostgreSQL; none when the data is kept in memory.
    func storedNamespaces() async throws(StoredNamespacesError) -> [String: NamespaceOwner?] {
        if let postgres {
            do {
                return try await postgres.owners().mapValues { $0 }
            } catch {
                throw StoredNamespacesError(reason: "\(error)")
            }
        }
        guard let folder = configuration.dataDirectory else { return [:] }
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw StoredNamespacesError(reason: "could not list the data folder: \(error.localizedDescription)")
        }
        var names: [String: NamespaceOwner?] = [:]
        for file in files where file.hasSuffix(".sqlite") {
            let name = String(file.dropLast(".sqlite".count))
            if Self.isValidName(name) { names[name] = .some(nil) }
        }
        return names
    }

    /// Why the store's namespaces could not be listed.
    struct StoredNamespacesError: Error {
        let reason: String
    }

    /// The owner of namespace `name` in a cluster; `nil` without PostgreSQL or before any process
    /// took it.
    func owner(of name: String) async throws(StoredNamespacesError) -> NamespaceOwner? {
        guard let postgres else { return nil }
        do {
            return try await postgres.owner(of: name)
        } catch {
            throw StoredNamespacesError(reason: "\(error)")
        }
    }

    /// A lease on database `name`, opening it if it is not open; release it when done.
    func lease(_ name: String) async throws(LookupError) -> DatabaseLease {
        while true {
            if let namespace = open[name] {
                // Lost to another process, and not closed yet: close it now and look again, so that
                // the request goes to the namespace's new owner.
                guard namespace.stepDown?.hasFired == true else { return DatabaseLease(namespace) }
                await stepDown(namespace)
                continue
            }
            guard Self.isValidName(name) else { throw .invalidName(name) }
            guard !isShuttingDown else { throw .shuttingDown }
            // Whoever resumes first after a closing or an opening records its outcome, so that no
            // waiter depends on another to run.
            if let closed = closing[name] {
                await closed.value
                if closing[name] == closed { closing[name] = nil }
                continue
            }
            if let pending = opening[name] {
                let result = await pending.value
                if opening[name] == pending { installOpened(name, result) }
                if case .failure(let error) = result { throw error }
                continue
            }
            // A namespace still closing holds its files: the new one opens after it closed.
            if open.count + opening.count + closing.count >= configuration.maxOpenNamespaces {
                if let (closedName, closed) = closing.first ?? closeLeastRecentlyUsed() {
                    await closed.value
                    forgetClosing(closedName, closed)
                    continue
                }
                metrics.tripped(.namespaces)
                logger.warning(
                    "refused to open a namespace: every open one is in use",
                    metadata: ["namespace": "\(name)", "max_open_namespaces": "\(configuration.maxOpenNamespaces)"])
                throw .tooManyOpen(limit: configuration.maxOpenNamespaces)
            }
            let task = Task { [configuration, startupRules, postgres, metrics, logger] in
                let result = await Self.openNamespace(
                    name, configuration: configuration, rules: startupRules, postgres: postgres, metrics: metrics,
                    logger: logger)
                // Before any client is served: what they write commits after these.
                if case .success(let namespace) = result { await namespace.database.runStoredDisconnects() }
                return result
            }
            opening[name] = task
            let result = await task.value
            if opening[name] == task { installOpened(name, result) }
            if case .failure(let error) = result { throw error }
        }
    }

    private func installOpened(_ name: String, _ result: Result<OpenNamespace, LookupError>) {
        opening[name] = nil
        guard case .success(let namespace) = result else { return }
        open[name] = namespace
        metrics.namespacesOpen.set(Int64(open.count))
        logger.info("opened database", metadata: ["namespace": "\(name)"])
        namespace.stepDown?.onFire { Task { await self.stepDown(namespace) } }
    }

    /// Closes `namespace`, whose store stopped serving it: writes are refused from now on, its
    /// connections and event streams end, and the next request opens it again (where PostgreSQL
    /// says who serves it now).
    private func stepDown(_ namespace: OpenNamespace) async {
        guard open[namespace.name] === namespace else { return }
        await namespace.database.stepDown()
        // Another caller may have closed it meanwhile (a request found it stepped down).
        guard open[namespace.name] === namespace else { return }
        steppedDown?(namespace.database)
        close(namespace, reason: "stepped_down")
    }

    /// Opens the store and loads the tree, on the blocking thread pool.
    private static func openNamespace(
        _ name: String, configuration: ServerConfiguration, rules: StartupRules?, postgres: PostgresStorage?,
        metrics: ServerMetrics, logger: Logger
    ) async -> Result<OpenNamespace, LookupError> {
        let creates = configuration.createsNamespacesOnWrite || name == configuration.defaultNamespace
        let initialSettings: [String: JSONValue] = rules.map { ["rules": .string($0.text)] } ?? [:]
        let durability: Durability = configuration.fsync ? .full : .normal
        do {
            return .success(
                try await NIOThreadPool.singleton.runIfActive { () throws(LookupError) -> OpenNamespace in
                    let signal = postgres.map { _ in StepDownSignal() }
                    /// A store created on the first write (``DeferredServerStore``), or `.unknown`
                    /// when writes do not create namespaces.
                    func deferred(
                        _ create: @escaping @Sendable () throws(StoreError) -> any ServerStore
                    ) throws(LookupError)
                        -> DeferredServerStore
                    {
                        guard creates else {
                            metrics.tripped(.namespaceCreation)
                            throw .unknown(name)
                        }
                        return DeferredServerStore(initialSettings: initialSettings, create: create)
                    }
                    let store: any ServerStore
                    var created: DeferredServerStore?
                    if let postgres, let signal {
                        // Served only under its lease, from the first request on, whatever it is
                        // (a read, a listen, a write): two processes never both answer for it.
                        if !creates {
                            let exists: Bool
                            do {
                                exists = try postgres.namespaceExists(name)
                            } catch {
                                throw openFailure(name, error, logger: logger)
                            }
                            guard exists else {
                                metrics.tripped(.namespaceCreation)
                                throw .unknown(name)
                            }
                        }
                        do throws(PostgresStoreError) {
                            let owned = try postgres.open(name)
                            owned.whenSteppedDown { signal.fire() }
                            store = owned
                        } catch {
                            if case .ownedElsewhere(_, let node, let host) = error {
                                throw .servedElsewhere(name, node: node, host: host)
                            }
                            throw openFailure(name, error, logger: logger)
                        }
                    } else if let folder = configuration.dataDirectory {
                        let file = URL(fileURLWithPath: folder).appendingPathComponent("\(name).sqlite").path
                        if FileManager.default.fileExists(atPath: file) {
                            do throws(StoreError) {
                                store = try SQLiteServerStore(path: file, durability: durability, logger: logger)
                            } catch {
                                throw storageFailure(name, error, logger: logger)
                            }
                        } else {
                            let made = try deferred { () throws(StoreError) in
                                try SQLiteServerStore(path: file, durability: durability, logger: logger)
                            }
                            (store, created) = (made, made)
                        }
                    } else {
                        let made = try deferred { InMemoryServerStore() }
                        (store, created) = (made, made)
                    }
                    let queue = CommitQueue(store: store, logger: logger) { writes in
                        metrics.commitBatchWrites.record(Double(writes))
                    }
                    let database: Database
                    do throws(StoreError) {
                        database = try Database(
                            name: name, store: store, commits: queue, metrics: metrics, logger: logger, rules: rules,
                            maxUncommittedWrites: configuration.maxUncommittedWrites, stepDown: signal,
                            indexRetention: IndexRetention(
                                maxPerNode: configuration.maxQueryIndexesPerNode,
                                unusedLifetime: configuration.queryIndexIdleTimeout))
                    } catch {
                        try? store.close()
                        throw storageFailure(name, error, logger: logger)
                    }
                    return OpenNamespace(
                        name: name, database: database, store: store, queue: queue, deferred: created,
                        keepsDataInMemory: postgres == nil && configuration.dataDirectory == nil, stepDown: signal)
                })
        } catch let error as LookupError {
            return .failure(error)
        } catch {
            return .failure(openFailure(name, error, logger: logger))
        }
    }

    /// Logs why namespace `name`'s store could not be opened and returns what its clients are told
    /// (no file names).
    private static func storageFailure(_ name: String, _ error: StoreError, logger: Logger) -> LookupError {
        openFailure(name, error, told: error.clientMessage, logger: logger)
    }

    /// Logs why namespace `name` could not be opened and returns what its clients are told: for a
    /// failure outside its store (taking it in the cluster, the thread pool), only that.
    private static func openFailure(
        _ name: String, _ error: any Error, told message: String = "the database could not be opened", logger: Logger
    ) -> LookupError {
        logger.error("could not open database", metadata: ["namespace": "\(name)", "error": "\(error)"])
        return .storage(message)
    }

    /// Starts closing the closable namespace unused for the longest; `nil` when every one is in use.
    private func closeLeastRecentlyUsed() -> (key: String, value: Task<Void, Never>)? {
        var oldest: (namespace: OpenNamespace, since: ContinuousClock.Instant)?
        for namespace in open.values where namespace.canClose {
            guard let since = namespace.idleSince else { continue }
            if oldest.map({ since < $0.since }) ?? true { oldest = (namespace, since) }
        }
        guard let oldest else { return nil }
        return (oldest.namespace.name, close(oldest.namespace, reason: "max_open_namespaces"))
    }

    /// Closes every closable namespace nobody used for ``ServerConfiguration/namespaceIdleTimeout``.
    func closeIdle() {
        let cutoff = ContinuousClock.now - configuration.namespaceIdleTimeout
        for namespace in open.values where namespace.canClose {
            guard let since = namespace.idleSince, since <= cutoff else { continue }
            close(namespace, reason: "idle")
        }
    }

    /// Closes idle namespaces every so often until cancelled.
    func closeIdleUntilCancelled() async {
        let interval = min(max(configuration.namespaceIdleTimeout / 4, .milliseconds(100)), .seconds(30))
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            closeIdle()
        }
    }

    @discardableResult
    private func close(_ namespace: OpenNamespace, reason: String) -> Task<Void, Never> {
        let name = namespace.name
        open[name] = nil
        metrics.namespacesOpen.set(Int64(open.count))
        let logger = logger
        let task = Task {
            await namespace.close()
            logger.info("closed database", metadata: ["namespace": "\(name)", "reason": "\(reason)"])
        }
        closing[name] = task
        Task {
            await task.value
            self.forgetClosing(name, task)
        }
        return task
    }

    private func forgetClosing(_ name: String, _ task: Task<Void, Never>) {
        if closing[name] == task { closing[name] = nil }
    }

    /// Opens no namespace from now on (the server is stopping); open ones keep serving.
    func stopOpening() {
        isShuttingDown = true
    }

    /// Commits everything queued and closes every namespace, those still opening included.
    ///
    /// The namespaces close side by side: one after the other, the few task and thread hops each
    /// close takes added up on a busy machine.
    func shutdown() async {
        isShuttingDown = true
        // Whoever resumes first installs an opened namespace (see `lease`); one that nobody had
        // installed yet would otherwise be left open, its file with it.
        while let (name, task) = opening.first {
            let result = await task.value
            if opening[name] == task { installOpened(name, result) }
        }
        let namespaces = Array(open.values)
        open = [:]
        metrics.namespacesOpen.set(Int64(0))
        let closes = Array(closing.values)
        await withTaskGroup(of: Void.self) { group in
            for namespace in namespaces { group.addTask { await namespace.close() } }
            for task in closes { group.addTask { await task.value } }
        }
    }
}

/// Keeps the committers running until graceful shutdown (closing idle namespaces meanwhile), then
/// flushes them once every realtime connection handed over its onDisconnect writes.
struct DatabaseService: Service {
    let registry: DatabaseRegistry
    let connections: OpenConnections
    let sessions: SessionRegistry
    let logger: Logger

    func run() async throws {
        let sweeper = Task { [registry] in await registry.closeIdleUntilCancelled() }
        try? await gracefulShutdown()
        sweeper.cancel()
        await registry.stopOpening()
        // The HTTP server closed its realtime connections on a graceful shutdown; when the server
        // was cancelled instead, they are still open, and would be served by stopped databases.
        sessions.closeAll()
        let open = connections.realtimeCount
        if open > 0 {
            logger.info(
                "waiting for closed connections to hand over their onDisconnect writes",
                metadata: ["connections": "\(open)"])
            await connections.realtimeDrained()
        }
        await registry.shutdown()
        logger.info("committed every queued write")
    }
}
