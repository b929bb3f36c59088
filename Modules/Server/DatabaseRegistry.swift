import Foundation
import Logging
import Persistence
import Prometheus
import ServiceLifecycle

/// The server's databases by namespace, opened (or created) on first use.
actor DatabaseRegistry {
    private var databases: [String: Database] = [:]
    private var queues: [CommitQueue] = []
    private var committers: [Task<Void, Never>] = []
    private let configuration: ServerConfiguration
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Rules given at start (`--rules`), applied to each database as it opens.
    private var startupRules: StartupRules?

    init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// Applies `rules` to every database opened from now on (before any is, at start).
    func useRules(_ rules: StartupRules) {
        startupRules = rules
    }

    /// Whether `name` can name a database: 1–63 of `a-z`, `0-9`, `-`, `_`.
    nonisolated static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
    }

    enum LookupError: Error {
        case invalidName(String)
        case unknown(String)
        case storage(String)
    }

    /// The database `name`, opening or creating it.
    func database(_ name: String) throws(LookupError) -> Database {
        if let database = databases[name] { return database }
        guard Self.isValidName(name) else { throw .invalidName(name) }
        let store: any ServerStore
        do {
            if let folder = configuration.dataDirectory {
                let file = URL(fileURLWithPath: folder).appendingPathComponent("\(name).sqlite").path
                if !configuration.createsNamespaces, !FileManager.default.fileExists(atPath: file) {
                    throw LookupError.unknown(name)
                }
                store = try SQLiteServerStore(
                    path: file, durability: configuration.fsync ? .full : .normal, logger: logger)
            } else {
                store = InMemoryServerStore()
            }
        } catch let error as LookupError {
            throw error
        } catch {
            throw storageFailure(name, error)
        }
        let metrics = metrics
        let queue = CommitQueue(store: store, logger: logger) { writes in
            metrics.commitBatchWrites.record(Double(writes))
        }
        let database: Database
        do {
            database = try Database(
                name: name, store: store, commits: queue, metrics: metrics, logger: logger, rules: startupRules)
        } catch {
            throw storageFailure(name, error)
        }
        committers.append(Task { await queue.run() })
        queues.append(queue)
        databases[name] = database
        logger.info("opened database", metadata: ["namespace": "\(name)"])
        return database
    }

    /// Logs why namespace `name` could not be opened and returns what its clients are told (no
    /// file names).
    private func storageFailure(_ name: String, _ error: any Error) -> LookupError {
        logger.error("could not open database", metadata: ["namespace": "\(name)", "error": "\(error)"])
        return .storage((error as? StoreError)?.clientMessage ?? "the database could not be opened")
    }

    /// Commits everything queued, then stops the committers.
    func shutdown() async {
        for queue in queues { queue.finish() }
        for committer in committers { await committer.value }
        committers = []
        queues = []
    }
}

/// Keeps the committers running until graceful shutdown, then flushes them once every realtime
/// connection handed over its onDisconnect writes.
struct DatabaseService: Service {
    let registry: DatabaseRegistry
    let connections: OpenConnections
    let sessions: SessionRegistry
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
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
