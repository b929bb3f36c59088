import ArgumentParser
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Options to let the tool start `canopy-server` itself, so that it can kill and restart it and
/// read its CPU time.
struct LaunchOptions: ParsableArguments {
    @Flag(
        help: """
            Start canopy-server at --server's address as a child process (stopped at the end); with \
            --tls, serving a throwaway certificate the tool makes (and trusts).
            """)
    var launch = false

    @Option(help: "The canopy-server executable for --launch (default: beside canopy-load, then on PATH).")
    var serverBinary: String?

    @Option(help: "Data folder for --launch (default: a new temporary folder, removed at the end).")
    var data: String?

    @Flag(help: "With --launch, keep the data in memory (a restart then loses it).")
    var inMemory = false

    @Option(
        help: ArgumentHelp(
            "With --launch, the server's --store: a PostgreSQL URL to keep the data there instead of SQLite files.",
            valueName: "postgres-url"))
    var serverStore: String?

    @Option(help: "Process id of a canopy-server not started by the tool, to read its CPU time and memory from /proc.")
    var serverPid: Int32?

    /// What a scenario that reads the server's memory says without a server process to read.
    static var noServerProcess: ValidationError {
        ValidationError("give --server-pid (the server's process id) or --launch")
    }

    /// Refuses a scenario that reads the server's memory with neither `--launch` nor `--server-pid`.
    func validateServerProcess() throws {
        guard launch || serverPid != nil else { throw Self.noServerProcess }
    }

    /// Starts the server when `--launch` was given (none otherwise); `serverArguments` are added to
    /// its command line (the limits a scenario sets, such as `--max-listens-per-connection`).
    func start(
        at address: (host: String, port: Int), console: Console, serverArguments: [String] = []
    ) async throws -> LaunchedServers {
        guard launch else { return LaunchedServers() }
        let binary =
            try serverBinary
            ?? ChildProcess.locate("canopy-server", preferring: [ChildProcess.ownFolder].compactMap { $0 })
        let folder: String
        let temporary: Bool
        if let data {
            folder = data
            temporary = false
        } else {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "canopy-load-\(ProcessInfo.processInfo.processIdentifier)"
                ).path
            temporary = true
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = serverStore.map { ["--store", $0] } ?? []
        var tls: [String] = []
        if LoadTLS.isEnabled {
            let pair = try ThrowawayCertificate.make(in: folder)
            try LoadTLS.enable(caFile: pair.authorityFile)
            tls = ["--tls-cert-file", pair.certificateFile, "--tls-key-file", pair.keyFile]
        }
        let server = LaunchedServer(
            binary: binary, host: address.host, port: address.port, folder: folder, removeFolder: temporary,
            inMemory: inMemory, extraArguments: store + tls + serverArguments)
        if await ChildProcess.accepts(host: address.host, port: address.port) {
            throw LoadError.addressInUse("\(address.host):\(address.port)")
        }
        let seconds = try await server.start()
        console.line(
            String(
                format: "started %@ (pid %d) at %@:%d in %.2f s, data %@%@%@", binary, server.pid, address.host,
                address.port, seconds, inMemory ? "in memory" : folder,
                tls.isEmpty ? "" : ", TLS with a throwaway certificate",
                serverArguments.isEmpty ? "" : ", " + serverArguments.joined(separator: " ")))
        return LaunchedServers([server])
    }
}

/// A `canopy-server` the tool started, which it can stop (SIGKILL or SIGTERM) and start again on the
/// same port and data folder.
final class LaunchedServer: Sendable {
    let binary: String
    let host: String
    let port: Int
    let folder: String
    let removeFolder: Bool
    let inMemory: Bool
    /// Arguments added after the address and data ones.
    let extraArguments: [String]
    private let current = Mutex<ChildProcess?>(nil)

    init(
        binary: String, host: String, port: Int, folder: String, removeFolder: Bool, inMemory: Bool,
        extraArguments: [String] = []
    ) {
        self.binary = binary
        self.host = host
        self.port = port
        self.folder = folder
        self.removeFolder = removeFolder
        self.inMemory = inMemory
        self.extraArguments = extraArguments
    }

    var pid: Int32 { current.withLock { $0?.pid } ?? 0 }

    /// CPU time of the running server process, in seconds.
    var cpuSeconds: Double? { current.withLock { $0 }?.cpuSeconds }

    var logPath: String { (folder as NSString).appendingPathComponent("canopy-server.log") }

    /// Starts the process and waits until it accepts connections; returns how long that took.
    @discardableResult
    func start() async throws -> Double {
        let started = monotonicNanoseconds()
        // Info level logs the moment it listens (and nothing per connection): the start is timed
        // by that line, since a probe connection could wait in an accept queue full of clients.
        var arguments = ["--host", host, "--port", String(port), "--log-level", "info"]
        arguments += inMemory ? ["--in-memory"] : ["--data", folder]
        arguments += extraArguments
        let child = try ChildProcess.launch("canopy-server", executable: binary, arguments: arguments, logPath: logPath)
        current.withLock { $0 = child }
        guard await child.waitForOutput("canopy-server listening", timeout: .seconds(60)) else {
            await child.stop()
            throw LoadError.serverDidNotStart(
                name: "canopy-server", address: "\(host):\(port)", seconds: 60, log: logPath)
        }
        return Double(monotonicNanoseconds() - started) / 1e9
    }

    /// Stops the process with `signal` and waits until it is gone.
    func stop(_ signal: Int32 = SIGKILL) async {
        guard let child = current.withLock({ $0 }) else { return }
        await child.stop(signal)
        current.withLock { $0 = nil }
    }

    /// Stops the process and removes a temporary data folder.
    func shutDown() async {
        await stop(SIGTERM)
        if removeFolder { try? FileManager.default.removeItem(atPath: folder) }
    }
}
