import ArgumentParser
import AsyncHTTPClient
import Foundation
import Histogram
import NIOCore
import NIOPosix
import ProcessResources
import Synchronization
import Transport
import Tree

/// `canopy-load`: drives a running canopy-server over real WebSocket connections and reports
/// throughput and latency percentiles.
@main
struct CanopyLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy-load",
        abstract: "Load generator for canopy-server.",
        discussion: """
            Every connection is a file descriptor: at start the tool raises its soft open-file limit \
            (RLIMIT_NOFILE) to the hard limit, which the servers it starts inherit, so that 10,000 \
            connections work where the hard limit allows them (`ulimit -Hn`). It connects only to the \
            addresses it is given (--server, --redis) and to the servers it starts on 127.0.0.1.

            Only requests the server answers `ok` count as work done. Against a server whose rules need \
            a signed-in user, give --token (or CANOPY_TOKEN): an ID token or the admin secret. Exit \
            status: 0 when the run did its work; 77 when the server refused the token or the \
            scenario's requests (the refusals are printed by status, and with --json the JSON object \
            holds them); 69 when nothing accepts connections at --server; 2 when a storm's clients \
            did not all come back; 1 for any other failure.
            """,
        subcommands: [
            Writes.self, Fanout.self, Storm.self, Idle.self, Baseline.self, Window.self, SlowReaders.self,
            ListenFlood.self, Takeover.self, TreeLoad.self, Chaos.self,
        ])

    /// Raises the open-file limit, then parses and runs the command as ArgumentParser's own `main` does.
    static func main() async {
        FileLimit.raiseToHardLimit()
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as ReportedFailure {
            FileHandle.standardError.write(Data("canopy-load: \(failure.error)\n".utf8))
            Foundation.exit(failure.error.exitCode)
        } catch let error as LoadError {
            // One line on stderr, and with --json the run's JSON object says it too.
            if let scenario = command as? any JSONReporting, scenario.json {
                LoadFailureReport(scenario: type(of: scenario).scenarioName, error: error).emit()
            }
            FileHandle.standardError.write(Data("canopy-load: \(error)\n".utf8))
            Foundation.exit(error.exitCode)
        } catch {
            exit(withError: error)
        }
    }
}

struct ServerOptions: ParsableArguments {
    @Option(help: "Server address, host:port.")
    var server: String = "127.0.0.1:9000"

    @Option(
        help: """
            Against a server on a 127.x.x.x address, bind every N connections to the next source address \
            (127.0.0.1, 127.0.0.2, ...): each gives the server's address and port its own ephemeral ports. \
            (default: nine tenths of the ephemeral port range, for runs of more connections than that)
            """)
    var connectionsPerSourceAddress: Int?

    @Option(help: "Namespace (database) to use.")
    var namespace: String = "load"

    @Option(
        help: """
            Credential for a server whose rules need one: an ID token or the server's admin secret, sent \
            as the realtime `auth` request on every connection and as 'Authorization: Bearer' (event \
            streams: ?auth=) over REST. (CANOPY_TOKEN)
            """)
    var token: String?

    @Flag(
        help: "Connect over TLS (wss://, https://), verifying the server's certificate with the system's trust roots.")
    var tls = false

    @Option(
        help: ArgumentHelp(
            "A PEM file of CA certificates trusted besides the system's for the server's certificate; implies --tls.",
            valueName: "path"))
    var tlsCaFile: String?

    /// Turns TLS on for every connection of the run (option groups are validated when parsed).
    func validate() throws {
        guard tls || tlsCaFile != nil else { return }
        do {
            try LoadTLS.enable(caFile: tlsCaFile)
        } catch {
            throw ValidationError("--tls-ca-file \(tlsCaFile ?? ""): \(error)")
        }
    }

    var uri: String { "/.ws?v=5&ns=\(namespace)" }

    /// The credential in force: `--token`, else `CANOPY_TOKEN`.
    var authToken: String? {
        let value = token ?? ProcessInfo.processInfo.environment["CANOPY_TOKEN"]
        return value?.isEmpty == true ? nil : value
    }

    /// A REST URL's query: `ns=NAMESPACE`, and `&auth=TOKEN` with a credential.
    var restQuery: String { "ns=\(namespace)" + authQuery }

    /// `&auth=TOKEN` to add to a REST URL's query, or nothing without a credential.
    var authQuery: String {
        guard let authToken else { return "" }
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return "&auth=" + (authToken.addingPercentEncoding(withAllowedCharacters: allowed) ?? authToken)
    }

    func endpoint() throws -> (host: String, port: Int) {
        guard let colon = server.lastIndex(of: ":"), let port = Int(server[server.index(after: colon)...]) else {
            throw ValidationError("--server must be host:port, got \(server)")
        }
        return (String(server[..<colon]), port)
    }

    /// Opens one realtime connection whose messages go to the session `makeSession` builds
    /// (`receiveBufferSize`: its socket's `SO_RCVBUF`, else the system's default).
    /// `localAddress`: the address its socket is bound to (``SourceAddresses``), else the system's choice.
    func connect(
        receiveBufferSize: Int? = nil, localAddress: String? = nil,
        _ makeSession: @escaping @Sendable () -> any LoadSession
    ) async throws -> LoadConnection {
        let (host, port) = try endpoint()
        return try await LoadConnection.connect(
            host: host, port: port, uri: uri, group: MultiThreadedEventLoopGroup.singleton,
            receiveBufferSize: receiveBufferSize, authToken: authToken, localAddress: localAddress,
            makeSession: makeSession)
    }

    /// Throws ``LoadError/cannotConnect(address:reason:)`` when nothing accepts connections at
    /// `--server`: said at once, before a scenario sets anything up.
    func checkReachable() async throws {
        let (host, port) = try endpoint()
        let bootstrap = LoadConnection.bootstrap(group: MultiThreadedEventLoopGroup.singleton)
        let channel = try await LoadConnection.connect(bootstrap, host: host, port: port) { channel in
            channel.eventLoop.makeSucceededFuture(channel)
        }
        try? await channel.close()
    }
}

/// Prints a line at once (unbuffered), so progress shows up in logs and pipes as it happens.
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Monotonic nanoseconds `seconds` from now.
func deadline(seconds: Double) -> UInt64 { monotonicNanoseconds() + UInt64(seconds * 1e9) }

func makeHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}

/// Figures shared by the sessions of one run, and a signal per finished session.
final class Tally: Sendable {
    /// Requests answered `ok` (acknowledged writes, answered listens).
    let count = Atomic<Int>(0)
    /// Requests answered with another status.
    let refusals = Refusals()
    let ready = Atomic<Int>(0)
    /// Sessions whose connection closed before they were done.
    let closedEarly = Atomic<Int>(0)
    /// Sessions done, whether complete or closed early.
    let sessionsDone = Atomic<Int>(0)
    private let latencies = Mutex(makeHistogram())
    private let finished: AsyncStream<Void>
    private let finishedContinuation: AsyncStream<Void>.Continuation

    init() { (finished, finishedContinuation) = AsyncStream<Void>.makeStream() }

    /// Adds one session's latencies and counts it as finished.
    func finish(with histogram: Histogram<UInt64>) {
        latencies.withLock { $0.add(histogram) }
        sessionsDone.add(1, ordering: .relaxed)
        finishedContinuation.yield()
    }

    var histogram: Histogram<UInt64> { latencies.withLock { $0 } }

    /// Counts a session whose connection closed before it was done as finished.
    func finishClosedEarly(with histogram: Histogram<UInt64>) {
        closedEarly.add(1, ordering: .relaxed)
        finish(with: histogram)
    }

    /// Waits until `sessions` sessions finished; returns how many were cut short by a closed
    /// connection.
    @discardableResult
    func waitForSessions(_ sessions: Int) async -> Int {
        var remaining = sessions
        for await _ in finished {
            remaining -= 1
            if remaining == 0 { break }
        }
        return closedEarly.load(ordering: .relaxed)
    }
}

func describe(_ histogram: Histogram<UInt64>, _ label: String) -> String {
    String(
        format: "%@: p50 %.2f ms, p99 %.2f ms, max %.2f ms", label, Double(histogram.valueAtPercentile(50)) / 1e6,
        Double(histogram.valueAtPercentile(99)) / 1e6, Double(histogram.max) / 1e6)
}

/// Request texts, spelled directly so the load generator spends its time sending, not encoding.
enum Requests {
    static func put(_ number: Int, path: String, json: String) -> String {
        #"{"t":"d","d":{"r":"# + String(number) + #","a":"p","b":{"p":""# + path + #"","d":"# + json + "}}}"
    }

    static func listen(_ number: Int, path: String) -> String {
        #"{"t":"d","d":{"r":"# + String(number) + #","a":"q","b":{"p":""# + path + #"","h":""}}}"#
    }

    static func get(_ number: Int, path: String) -> String {
        #"{"t":"d","d":{"r":"# + String(number) + #","a":"g","b":{"p":""# + path + #"","q":{}}}}"#
    }
}

/// Opens `count` realtime connections, at most `concurrency` handshakes at a time; more than one
/// loopback address's ephemeral ports are spread over several source addresses (``SourceAddresses``).
func connectAll(
    _ count: Int, options: ServerOptions, concurrency: Int = 64,
    makeSession: @escaping @Sendable (Int) -> any LoadSession
) async throws -> [LoadConnection] {
    let server = try options.endpoint().host
    let sources =
        if let perAddress = options.connectionsPerSourceAddress {
            SourceAddresses(connections: count, server: server, perAddress: perAddress)
        } else {
            SourceAddresses(connections: count, server: server)
        }
    return try await connectAll(count, concurrency: concurrency) { index in
        try await options.connect(localAddress: sources.address(of: index)) { makeSession(index) }
    }
}

/// Opens `count` connections with `connect`, at most `concurrency` at a time.
func connectAll<Connection: Sendable>(
    _ count: Int, concurrency: Int = 64, _ connect: @escaping @Sendable (Int) async throws -> Connection
) async throws -> [Connection] {
    try await withThrowingTaskGroup(of: Connection.self) { group in
        var connections: [Connection] = []
        connections.reserveCapacity(count)
        for index in 0..<count {
            if index >= concurrency, let connection = try await group.next() { connections.append(connection) }
            group.addTask { try await connect(index) }
        }
        for try await connection in group { connections.append(connection) }
        return connections
    }
}

/// A connection whose incoming messages do not matter (the fan-out writer, idle connections).
final class IgnoringSession: LoadSession {
    private let onHello: (@Sendable () -> Void)?

    init(onHello: (@Sendable () -> Void)? = nil) { self.onHello = onHello }

    func received(_ message: String, output: inout LoadOutput) {
        if let onHello, MessageText.isHello(message) { onHello() }
    }

    func closed() {}
}
