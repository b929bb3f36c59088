public import CanopyServer
import Foundation
import Synchronization

/// The store test servers keep their namespaces in: SQLite files in their data folder (the
/// default), or, with `CANOPY_TEST_STORE=postgres`, a PostgreSQL database of their own on one
/// cluster this process starts on first use, so that the server suites run on either store:
///
/// ```
/// CANOPY_TEST_STORE=postgres swift test --filter EndToEndTests
/// ```
///
/// A server's database is named after its data folder, so a server started again on the same
/// folder finds its data, as with SQLite. Servers keeping their data in memory stay in memory.
public enum TestStore {
    /// Whether test servers use PostgreSQL (`CANOPY_TEST_STORE=postgres`).
    public static var isPostgres: Bool { ProcessInfo.processInfo.environment["CANOPY_TEST_STORE"] == "postgres" }

    /// `configuration` with the store under test: unchanged for SQLite, for a server keeping its
    /// data in memory and for one already given a PostgreSQL URL; otherwise its `postgresURL` names
    /// the database for its data folder, made on first use.
    public static func apply(to configuration: ServerConfiguration) async throws -> ServerConfiguration {
        guard isPostgres, configuration.postgresURL == nil, let folder = configuration.dataDirectory else {
            return configuration
        }
        var configuration = configuration
        configuration.postgresURL = try await SharedPostgres.shared.database(for: folder)
        // The database is this server's alone, so no other process ever waits for its lease; a
        // long one keeps a renewal that a loaded machine delays past 5 s from making the server
        // step down and close its clients in the middle of a test about something else. (Leases
        // are tested on clusters of their own, with the durations those tests choose.)
        configuration.leaseDuration = max(configuration.leaseDuration, .seconds(60))
        return configuration
    }
}

/// The one PostgreSQL cluster of a test process run with `CANOPY_TEST_STORE=postgres`: started on
/// first use, stopped when the process exits.
actor SharedPostgres {
    static let shared = SharedPostgres()

    private var cluster: Task<PostgresTestCluster, any Error>?
    private var databases: [String: Task<String, any Error>] = [:]

    /// The URL of the database kept for data folder `folder`.
    func database(for folder: String) async throws -> String {
        if let made = databases[folder] { return try await made.value }
        let name = "canopy_test_\(databases.count + 1)"
        let cluster = startedCluster()
        let made = Task {
            let cluster = try await cluster.value
            try await cluster.psql("CREATE DATABASE \(name)")
            return cluster.url(database: name)
        }
        databases[folder] = made
        return try await made.value
    }

    private func startedCluster() -> Task<PostgresTestCluster, any Error> {
        if let cluster { return cluster }
        let started = Task {
            let cluster = try await PostgresTestCluster.start()
            SharedPostgres.stopAtExit(cluster)
            return cluster
        }
        cluster = started
        return started
    }

    private static let leftAtExit = Mutex<(server: Int32, folder: String)?>(nil)

    /// Stops the cluster's server (as a crash would: nothing in it is kept) and removes its folder
    /// when the process exits.
    private static func stopAtExit(_ cluster: PostgresTestCluster) {
        guard let server = cluster.serverProcessIdentifier else { return }
        leftAtExit.withLock { $0 = (server, cluster.folder) }
        atexit {
            guard let (server, folder) = SharedPostgres.leftAtExit.withLock({ $0 }) else { return }
            kill(server, SIGQUIT)
            var status: Int32 = 0
            waitpid(server, &status, 0)
            try? FileManager.default.removeItem(atPath: folder)
        }
    }
}
