import Foundation
import Synchronization

/// A private PostgreSQL cluster for one test: `initdb` into a temporary folder, the server started
/// as a child process on a Unix socket only (no TCP port), stopped and removed by ``stop()``. Run as
/// root, PostgreSQL's programs run as the `postgres` user (PostgreSQL refuses root), through
/// `setpriv`.
///
/// The server is this process's own child rather than `pg_ctl`'s daemon, which would outlive the
/// test process and hold descriptors inherited from it.
///
/// ```swift
/// try await withPostgresCluster { cluster in
///     let storage = PostgresStorage(location: try PostgresLocation(cluster.url), node: "n1", logger: logger)
/// }
/// ```
public final class PostgresTestCluster: Sendable {
    private let server = Mutex<ChildProcess?>(nil)
    public enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case command([String], status: Int32, output: String)

        public var description: String {
            switch self {
            case .notInstalled:
                "PostgreSQL's server programs were not found (/usr/lib/postgresql/*/bin); install Debian's postgresql"
            case .command(let arguments, let status, let output):
                "\(arguments.joined(separator: " ")) exited with \(status): \(output)"
            }
        }
    }

    /// Whether the PostgreSQL suites run: only when `CANOPY_TEST_POSTGRES=1`, which `.ci/run` sets
    /// for a run of those suites on their own, after the rest. Run beside every other suite, they
    /// coincided with a test process stalling until a server's cancellation passed its limit.
    public static var isEnabled: Bool { ProcessInfo.processInfo.environment["CANOPY_TEST_POSTGRES"] == "1" }

    public let folder: String
    /// The port in the socket's name (`.s.PGSQL.<port>`); nothing listens on TCP.
    public let port: Int
    private let binaries: String
    private var data: String { folder + "/data" }
    private var socketDirectory: String { folder + "/socket" }

    /// The `--store` URL of the cluster's `postgres` database.
    public var url: String { url(database: "postgres") }

    /// The `--store` URL of `database` on the cluster.
    public func url(database: String) -> String {
        "postgres://postgres@localhost:\(port)/\(database)?host=\(socketDirectory)"
    }

    /// The server's process, while it runs.
    var serverProcessIdentifier: Int32? { server.withLock { $0?.pid } }

    private init(folder: String, port: Int, binaries: String) {
        self.folder = folder
        self.port = port
        self.binaries = binaries
    }

    /// Creates and starts a cluster (about a second).
    public static func start() async throws -> PostgresTestCluster {
        guard let binaries = installedBinaries() else { throw Failure.notInstalled }
        let folder = try TestServer.makeTemporaryDirectory()
        let cluster = PostgresTestCluster(folder: folder, port: Int.random(in: 20_000..<60_000), binaries: binaries)
        do {
            try FileManager.default.createDirectory(atPath: cluster.socketDirectory, withIntermediateDirectories: true)
            if geteuid() == 0 {
                for path in [folder, cluster.socketDirectory] {
                    try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: path)
                }
            }
            try await cluster.run("initdb", "-D", cluster.data, "-A", "trust", "-U", "postgres", "--no-sync")
            let settings = """
                listen_addresses = ''
                port = \(cluster.port)
                unix_socket_directories = '\(cluster.socketDirectory)'
                fsync = off
                max_connections = 500
                """
            let configuration = cluster.data + "/postgresql.conf"
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: configuration))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(("\n" + settings + "\n").utf8))
            try handle.close()
            try await cluster.startServer()
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    /// Restarts the server listening on TCP at `address` too (one of this host's), trusting
    /// connections from its /16 network: for a process in a ``NetworkNamespace`` that reaches the
    /// cluster over its veth pair. Clients reach it at ``url(host:database:)``.
    public func listen(on address: String) async throws {
        try await listen(on: [address])
    }

    /// Restarts the server listening on TCP at each of `addresses` (this host's ends of several
    /// ``NetworkNamespace``s), trusting connections from each one's /16 network.
    public func listen(on addresses: [String]) async throws {
        let networks = Set(addresses.map { $0.split(separator: ".").prefix(2).joined(separator: ".") + ".0.0/16" })
        let rules = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/pg_hba.conf"))
        try rules.seekToEnd()
        for network in networks.sorted() {
            try rules.write(contentsOf: Data("\nhost all all \(network) trust\n".utf8))
        }
        try rules.close()
        try await psql("ALTER SYSTEM SET listen_addresses = '\(addresses.joined(separator: ","))'")
        try await restart()
    }

    /// The URL of `database` over TCP at `host` (see ``listen(on:)``).
    public func url(host: String, database: String = "postgres") -> String {
        "postgres://postgres@\(host):\(port)/\(database)"
    }

    /// Restarts the server; `immediate` stops it as a crash would (SIGQUIT: no checkpoint, the next
    /// start recovers from the write-ahead log).
    public func restart(immediate: Bool = false) async throws {
        await stopServer(signal: immediate ? SIGQUIT : SIGINT)
        try await startServer()
    }

    /// Stops the server, keeping its files: a fast shutdown (SIGINT), or with `immediately` as a
    /// crash would (SIGQUIT: no checkpoint; the next start recovers from the write-ahead log).
    public func stopServer(immediately: Bool = false) async {
        await stopServer(signal: immediately ? SIGQUIT : SIGINT)
    }

    private func stopServer(signal: Int32) async {
        guard
            let process = server.withLock({ state -> ChildProcess? in
                defer { state = nil }
                return state
            })
        else { return }
        process.send(signal)
        await process.exit()
    }

    /// Starts the server and waits until it answers.
    public func startServer() async throws {
        var command = [binaries + "/postgres", "-D", data]
        if geteuid() == 0 { command = Self.asPostgres + command }
        let logFile = folder + "/server.log"
        if !FileManager.default.fileExists(atPath: logFile) {
            _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logFile))
        try log.seekToEnd()
        let process = try ChildProcess.launch(
            command[0], Array(command.dropFirst()), standardOutput: .handle(log), standardError: .handle(log))
        try? log.close()
        server.withLock { $0 = process }
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                try await psql("SELECT 1")
                return
            } catch {
                guard ContinuousClock.now < deadline, process.isRunning else {
                    let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
                    throw Failure.command(
                        command, status: process.isRunning ? 0 : process.status,
                        output: "did not answer within 30 s: \(text.suffix(2000))")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Runs `sql` with `psql` and returns its unaligned output (`-At`).
    @discardableResult
    public func psql(_ sql: String) async throws -> String {
        try await run(
            "psql", "-h", socketDirectory, "-p", "\(port)", "-U", "postgres", "-At", "-v", "ON_ERROR_STOP=1",
            "-c", sql)
    }

    /// Stops the server and removes its folder.
    public func stop() async {
        await stopServer(signal: SIGQUIT)
        try? FileManager.default.removeItem(atPath: folder)
    }

    private static let asPostgres = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]

    /// The newest PostgreSQL's server programs, as Debian installs them.
    private static func installedBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let newest = versions.compactMap(Int.init).sorted().last
        guard let newest else { return nil }
        let binaries = "\(root)/\(newest)/bin"
        return FileManager.default.isExecutableFile(atPath: binaries + "/pg_ctl") ? binaries : nil
    }

    @discardableResult
    private func run(_ program: String, _ arguments: String...) async throws -> String {
        let executable = program == "psql" ? "/usr/bin/psql" : binaries + "/" + program
        var command = [executable] + arguments
        if geteuid() == 0 { command = Self.asPostgres + command }
        // A file, not a pipe: a server started meanwhile from another thread may inherit the pipe's
        // write end, and a read to its end would then wait as long as that server runs.
        let outputPath = folder + "/command-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let process = try ChildProcess.launch(
            command[0], Array(command.dropFirst()), directory: folder, standardOutput: .handle(output),
            standardError: .handle(output))
        try? output.close()
        await process.exit()
        let status = process.status
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else { throw Failure.command(command, status: status, output: text) }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Runs `body` with a fresh PostgreSQL cluster, stopped and removed afterwards.
public func withPostgresCluster<Result: Sendable>(
    _ body: (PostgresTestCluster) async throws -> Result
) async throws -> Result {
    let cluster = try await PostgresTestCluster.start()
    do {
        let result = try await body(cluster)
        await cluster.stop()
        return result
    } catch {
        await cluster.stop()
        throw error
    }
}
