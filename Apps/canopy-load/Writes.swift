import ArgumentParser
import Foundation
import Histogram
import ProcessResources
import Synchronization

/// Acknowledged writes per second from many concurrent writers.
struct Writes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledged writes/s from concurrent WebSocket writers.",
        discussion: """
            Each connection keeps `--pipeline` puts in flight to `load/w<connection>/k<0..999>` and sends \
            the next one when one is answered. Only puts answered `ok` count as acknowledged; the others \
            (`permission_denied` from the server's rules, …) are counted by status and printed, a \
            connection none of whose first --pipeline puts was acknowledged stops at once, and the run \
            exits with status 77 when the server refused any put. With `--baseline <folder>`, raw upserts of the same \
            keys are then measured straight through GRDB at the same durability (see `canopy-load \
            baseline`): once with the server's own average transaction size during the run (read from \
            its /metrics), once with connections × pipeline rows per transaction; the ratios are printed. \
            A server started with --launch is stopped before the baseline runs.
            """)

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Concurrent writer connections.") var connections = 100
    @Option(help: "Writes each connection keeps in flight.") var pipeline = 32
    @Option(help: "Seconds to run.") var duration: Double = 10
    @Option(help: "Folder for raw GRDB baseline runs after the server run (same durability).")
    var baseline: String?
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard connections > 0, pipeline > 0 else {
            throw ValidationError("--connections and --pipeline must be positive")
        }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        if launchOptions.launch, launchOptions.inMemory, baseline != nil {
            throw ValidationError("--baseline compares with the server's durability: drop --in-memory")
        }
        _ = try options.endpoint()
    }

    func run() async throws {
        let run = try ScenarioRun(json: json, connections: connections + 2, what: "\(connections) writers")
        let (console, machine) = (run.console, run.machine)
        let result = try await run.withServer(options, launchOptions) { server in
            try await measure(console: console, serverCPU: server.cpuSeconds)
        }
        for line in result.describe() { console.line(line) }
        let refused = LoadError.refused(
            what: "writes", refusals: result.refusedWrites, total: result.ackedWrites + result.refused,
            server: options.server)
        guard result.ackedWrites > 0 else {
            try console.emit(report(result, machine: machine, baselines: []))
            throw ReportedFailure(
                error: result.refused > 0 ? refused : .check("no write was answered within \(duration) s"))
        }
        var baselines: [WritesBaseline] = []
        if let baseline, let writesPerTransaction = result.writesPerTransaction {
            let sizes = Set([max(1, Int(writesPerTransaction.rounded())), connections * pipeline]).sorted()
            for batch in sizes {
                let run = BaselineRun(
                    folder: baseline, writers: connections, keysPerWriter: 1000, batch: batch, duration: duration,
                    fsync: true, log: console.line)
                let rate = try run.measure()
                let figure = WritesBaseline(
                    rowsPerTransaction: batch, fsync: true, upsertsPerSecond: rate, ratio: result.writesPerSecond / rate
                )
                console.line(
                    String(format: "server / raw GRDB baseline at %d per transaction: %.2f×", batch, figure.ratio))
                baselines.append(figure)
            }
        }
        try console.emit(report(result, machine: machine, baselines: baselines))
        if result.refused > 0 { throw ReportedFailure(error: refused) }
    }

    private func report(_ result: WritesResult, machine: MachineInfo, baselines: [WritesBaseline]) -> WritesReport {
        WritesReport(
            scenario: "writes", server: options.server, connections: connections, pipeline: pipeline,
            duration: duration, machine: machine, canopy: result, baseline: baselines)
    }

    /// Runs the writers against the server for `duration` seconds.
    private func measure(console: Console, serverCPU: @escaping @Sendable () -> Double?) async throws -> WritesResult {
        let batchesBefore = baseline == nil ? nil : try await CommitBatches.read(from: options.server)
        let tally = Tally()
        let connections = connections
        let duration = duration
        console.line(
            "writes: \(connections) connections × \(pipeline) in flight for \(duration) s against \(options.server)")
        let cpuBefore = serverCPU()
        let ownBefore = ProcessCPU.ownSeconds()
        let started = monotonicNanoseconds()
        let deadline = started + UInt64(duration * 1e9)
        let pipeline = pipeline
        let status: @Sendable () -> String = {
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            let acked = tally.count.load(ordering: .relaxed)
            return String(
                format: "writes: %.1f of %g s, %d acked (%.0f/s), %d refused, %d of %d connections done", seconds,
                duration, acked, Double(acked) / max(seconds, 1e-3), tally.refusals.total,
                tally.sessionsDone.load(ordering: .relaxed), connections)
        }
        let (open, closedEarly) = try await console.withProgress(status) {
            let open = try await connectAll(connections, options: options) { index in
                WriterSession(index: index, pipeline: pipeline, deadline: deadline, tally: tally)
            }
            return (open, await tally.waitForSessions(connections))
        }
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        let cpuAfter = serverCPU()
        for connection in open { connection.close() }
        if closedEarly > 0 {
            console.line("warning: \(closedEarly) connection(s) closed before their session was done")
        }
        let total = tally.count.load(ordering: .relaxed)
        let refusals = tally.refusals.byStatus
        let serverCPUSeconds = cpuAfter.flatMap { after in cpuBefore.map { after - $0 } }
        var batches: CommitBatches?
        if let batchesBefore { batches = try await CommitBatches.read(from: options.server).since(batchesBefore) }
        return WritesResult(
            ackedWrites: total, refused: refusals.values.reduce(0, +), refusedWrites: refusals, seconds: elapsed,
            writesPerSecond: Double(total) / elapsed,
            ackLatency: LatencyFigures(tally.histogram), connectionsClosedEarly: closedEarly,
            serverCPUSeconds: serverCPUSeconds,
            serverCPUMicrosecondsPerWrite: serverCPUSeconds.map { total > 0 ? $0 / Double(total) * 1e6 : 0 },
            loadGeneratorCPUSeconds: ProcessCPU.ownSeconds() - ownBefore, commitTransactions: batches?.transactions,
            writesPerTransaction: batches?.averageWrites)
    }
}

/// The figures of one `writes` run against the server.
struct WritesResult: Encodable {
    /// Puts answered `ok`: the only ones counted in the rate and the latencies.
    var ackedWrites: Int
    /// Puts answered with another status, and how many with each.
    var refused: Int
    var refusedWrites: [String: Int]
    var seconds: Double
    var writesPerSecond: Double
    var ackLatency: LatencyFigures
    var connectionsClosedEarly: Int
    /// CPU time of the server process during the run, when the tool knows its pid.
    var serverCPUSeconds: Double?
    var serverCPUMicrosecondsPerWrite: Double?
    var loadGeneratorCPUSeconds: Double
    /// The server's group commits during the run (read from its /metrics; with --baseline only).
    var commitTransactions: Int?
    var writesPerTransaction: Double?

    func describe() -> [String] {
        var lines = [
            String(format: "acked writes: %d in %.2f s = %.0f writes/s", ackedWrites, seconds, writesPerSecond),
            "ack latency: " + (ackedWrites > 0 ? ackLatency.describe() : "none (no write was acknowledged)"),
        ]
        if refused > 0 { lines.append("refused writes: \(refused) (\(Refusals.describe(refusedWrites)))") }
        if let serverCPUSeconds, let serverCPUMicrosecondsPerWrite {
            lines.append(
                String(
                    format: "server CPU %.2f s = %.2f µs per write; load generator CPU %.2f s", serverCPUSeconds,
                    serverCPUMicrosecondsPerWrite, loadGeneratorCPUSeconds))
        }
        if let commitTransactions, let writesPerTransaction {
            lines.append(
                String(
                    format: "server group commit: %d transactions, %.0f writes per transaction on average",
                    commitTransactions, writesPerTransaction))
        }
        return lines
    }
}

/// Raw GRDB upserts at one transaction size, against the server's rate.
struct WritesBaseline: Encodable {
    var rowsPerTransaction: Int
    var fsync: Bool
    var upsertsPerSecond: Double
    /// The server's acknowledged writes/s ÷ these upserts/s.
    var ratio: Double
}

/// The `--json` object of a `writes` run.
struct WritesReport: Encodable {
    var scenario: String
    var server: String
    var connections: Int
    var pipeline: Int
    var duration: Double
    var machine: MachineInfo
    var canopy: WritesResult
    var baseline: [WritesBaseline]
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
        let metrics = try await MetricsSnapshot.read(from: server)
        guard let count = metrics.value("canopy_commit_batch_writes_count"),
            let sum = metrics.value("canopy_commit_batch_writes_sum")
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
        /// Puts of this connection answered `ok`.
        var acked = 0

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
            let status = MessageText.status(message) ?? "no status"
            if status == "ok" {
                acked += 1
                tally.count.add(1, ordering: .relaxed)
                _ = histogram.record(now - sent)
            } else {
                tally.refusals.add(status)
            }
            // A refused put is not replaced until a put of this connection was acknowledged: one whose
            // puts are all refused stops once its first ones are answered.
            if now < deadline, acked > 0 {
                while inFlight < pipeline { sendOne(&output) }
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
