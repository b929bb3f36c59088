import ArgumentParser
import AsyncHTTPClient
import Foundation
import Histogram
import NIOCore
import NIOPosix
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
            """,
        subcommands: [Writes.self, Fanout.self, Storm.self, Idle.self, Baseline.self, Window.self])

    /// Raises the open-file limit, then parses and runs the command as ArgumentParser's own `main` does.
    static func main() async {
        FileLimit.raiseToHardLimit()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

struct ServerOptions: ParsableArguments {
    @Option(help: "Server address, host:port.")
    var server: String = "127.0.0.1:9000"

    @Option(help: "Namespace (database) to use.")
    var namespace: String = "load"

    var uri: String { "/.ws?v=5&ns=\(namespace)" }

    func endpoint() throws -> (host: String, port: Int) {
        guard let colon = server.lastIndex(of: ":"), let port = Int(server[server.index(after: colon)...]) else {
            throw ValidationError("--server must be host:port, got \(server)")
        }
        return (String(server[..<colon]), port)
    }

    /// Opens one realtime connection whose messages go to the session `makeSession` builds.
    func connect(_ makeSession: @escaping @Sendable () -> any LoadSession) async throws -> LoadConnection {
        let (host, port) = try endpoint()
        return try await LoadConnection.connect(
            host: host, port: port, uri: uri, group: MultiThreadedEventLoopGroup.singleton, makeSession: makeSession)
    }
}

/// Prints a line at once (unbuffered), so progress shows up in logs and pipes as it happens.
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func makeHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}

/// Figures shared by the sessions of one run, and a signal per finished session.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
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

    /// Waits until `sessions` sessions finished; reports sessions cut short by a closed connection.
    func waitForSessions(_ sessions: Int) async {
        var remaining = sessions
        for await _ in finished {
            remaining -= 1
            if remaining == 0 { break }
        }
        let early = closedEarly.load(ordering: .relaxed)
        if early > 0 { report("warning: \(early) connection(s) closed before their session was done") }
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
}

/// Opens `count` realtime connections, at most `concurrency` handshakes at a time.
func connectAll(
    _ count: Int, options: ServerOptions, concurrency: Int = 64,
    makeSession: @escaping @Sendable (Int) -> any LoadSession
) async throws -> [LoadConnection] {
    try await connectAll(count, concurrency: concurrency) { index in
        try await options.connect { makeSession(index) }
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

/// Acknowledged writes per second from many concurrent writers.
struct Writes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledged writes/s from concurrent WebSocket writers.",
        discussion: """
            Each connection keeps `--pipeline` puts in flight to `load/w<connection>/k<0..999>` and sends \
            the next one when one is acknowledged. With `--baseline <folder>`, raw upserts of the same \
            keys are then measured straight through GRDB at the same durability (see `canopy-load \
            baseline`): once with the server's own average transaction size during the run (read from \
            its /metrics), once with connections × pipeline rows per transaction; the ratios are printed.
            """)

    @OptionGroup var options: ServerOptions
    @Option(help: "Concurrent writer connections.") var connections = 100
    @Option(help: "Writes each connection keeps in flight.") var pipeline = 32
    @Option(help: "Seconds to run.") var duration: Double = 10
    @Option(help: "Folder for raw GRDB baseline runs after the server run (same durability).")
    var baseline: String?

    func validate() throws {
        guard connections > 0, pipeline > 0 else {
            throw ValidationError("--connections and --pipeline must be positive")
        }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        _ = try options.endpoint()
    }

    func run() async throws {
        let batchesBefore = baseline == nil ? nil : try await CommitBatches.read(from: options.server)
        let tally = Tally()
        let deadline = monotonicNanoseconds() + UInt64(duration * 1e9)
        report("writes: \(connections) connections × \(pipeline) in flight for \(duration) s against \(options.server)")
        let started = monotonicNanoseconds()
        let pipeline = pipeline
        let open = try await connectAll(connections, options: options) { index in
            WriterSession(index: index, pipeline: pipeline, deadline: deadline, tally: tally)
        }
        await tally.waitForSessions(connections)
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        let total = tally.count.load(ordering: .relaxed)
        let rate = Double(total) / elapsed
        report(String(format: "acked writes: %d in %.2f s = %.0f writes/s", total, elapsed, rate))
        report(describe(tally.histogram, "ack latency"))
        for connection in open { connection.close() }
        guard let baseline, let batchesBefore else { return }
        let batches = try await CommitBatches.read(from: options.server).since(batchesBefore)
        report(
            String(
                format: "server group commit: %d transactions, %.0f writes per transaction on average",
                batches.transactions, batches.averageWrites))
        for batch in Set([max(1, Int(batches.averageWrites.rounded())), connections * pipeline]).sorted() {
            let run = BaselineRun(
                folder: baseline, writers: connections, keysPerWriter: 1000, batch: batch, duration: duration,
                fsync: true)
            let baselineRate = try run.measure()
            report(
                String(format: "server / raw GRDB baseline at %d per transaction: %.2f×", batch, rate / baselineRate))
        }
    }
}

/// The server's group-commit figures, read from its `/metrics`.
struct CommitBatches {
    var transactions: Int
    var writes: Double

    var averageWrites: Double { transactions == 0 ? 0 : writes / Double(transactions) }

    func since(_ earlier: CommitBatches) -> CommitBatches {
        CommitBatches(transactions: transactions - earlier.transactions, writes: writes - earlier.writes)
    }

    static func read(from server: String) async throws -> CommitBatches {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://\(server)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 24))
        func value(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        guard let count = value("canopy_commit_batch_writes_count"), let sum = value("canopy_commit_batch_writes_sum")
        else { throw ValidationError("\(server)/metrics has no canopy_commit_batch_writes histogram") }
        return CommitBatches(transactions: Int(count), writes: sum)
    }
}

/// One writer connection: `pipeline` puts in flight, the next sent as each is acknowledged.
final class WriterSession: LoadSession {
    private let tally: Tally
    // One access per message: each access to a class's stored property is checked at run time.
    private var state: State

    private struct State {
        let pipeline: Int
        let deadline: UInt64
        /// The puts' paths (`load/w<connection>/k<0..999>`), spelled once.
        let paths: [String]
        /// Send times of the requests in flight, at their number modulo the ring's size: the server
        /// answers a connection's writes in order, so at most `pipeline` slots are ever taken.
        var sentAt: [(number: Int, time: UInt64)]
        var inFlight = 0
        var next = 1
        var histogram = makeHistogram()
        var finished = false

        mutating func sendOne(_ output: inout LoadOutput) {
            let number = next
            next += 1
            sentAt[number % sentAt.count] = (number, monotonicNanoseconds())
            inFlight += 1
            output.send(Requests.put(number, path: paths[number % paths.count], json: String(number)))
        }

        /// Takes the send time of request `number`, if it is in flight.
        mutating func acknowledge(_ number: Int) -> UInt64? {
            let slot = number % sentAt.count
            guard sentAt[slot].number == number else { return nil }
            sentAt[slot].number = 0
            inFlight -= 1
            return sentAt[slot].time
        }

        mutating func received(_ message: String, output: inout LoadOutput, tally: Tally) {
            if next == 1 {
                if MessageText.isHello(message) { for _ in 0..<pipeline { sendOne(&output) } }
                return
            }
            guard !finished, let number = MessageText.responseNumber(message), let sent = acknowledge(number) else {
                return
            }
            let now = monotonicNanoseconds()
            tally.count.add(1, ordering: .relaxed)
            _ = histogram.record(now - sent)
            if now < deadline {
                sendOne(&output)
            } else if inFlight == 0 {
                finished = true
                tally.finish(with: histogram)
            }
        }
    }

    init(index: Int, pipeline: Int, deadline: UInt64, tally: Tally) {
        self.tally = tally
        state = State(
            pipeline: pipeline, deadline: deadline, paths: (0..<1000).map { "load/w\(index)/k\($0)" },
            sentAt: Array(repeating: (0, 0), count: pipeline * 2))
    }

    func received(_ message: String, output: inout LoadOutput) {
        let tally = tally
        state.received(message, output: &output, tally: tally)
    }

    func closed() {
        guard !state.finished else { return }
        state.finished = true
        tally.finishClosedEarly(with: state.histogram)
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

/// Server memory per idle connection.
struct Idle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Server memory per idle connection (reads the server's RSS).")

    @OptionGroup var options: ServerOptions
    @Option(help: "Idle connections to open.") var connections = 1000
    @Option(help: "Process id of the canopy-server (for /proc/PID/status).") var serverPid: Int32

    func rss() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(serverPid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw ValidationError("cannot read VmRSS of process \(serverPid)") }
        return kilobytes * 1024
    }

    func validate() throws {
        guard connections > 0 else { throw ValidationError("--connections must be positive") }
        _ = try options.endpoint()
    }

    func run() async throws {
        let tally = Tally()
        // Warm up: one connection so lazily created server state does not count as per-connection cost.
        let warm = try await options.connect { IgnoringSession(onHello: { tally.finish(with: makeHistogram()) }) }
        await tally.waitForSessions(1)
        try await Task.sleep(for: .seconds(1))
        let before = try rss()
        let open = try await connectAll(connections, options: options) { _ in
            IgnoringSession(onHello: { tally.finish(with: makeHistogram()) })
        }
        await tally.waitForSessions(connections)
        try await Task.sleep(for: .seconds(2))
        let after = try rss()
        let perConnection = Double(after - before) / Double(connections)
        report(
            String(
                format: "idle connections: %d, server RSS %.1f MB → %.1f MB: %.1f KB per connection",
                connections, Double(before) / 1e6, Double(after) / 1e6, perConnection / 1024))
        for connection in open { connection.close() }
        warm.close()
    }
}
