import ArgumentParser
import Foundation
import Histogram
import ProcessResources
import Synchronization

/// One connection floods the server with listens: the per-connection cap must hold, and other
/// clients must not notice.
struct ListenFlood: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen-flood",
        abstract: "One connection sends a flood of listens: the server's cap, its memory, others' latency.",
        discussion: """
            One realtime connection sends --listens listen requests (`/load/flood/<i>`, each a \
            location of its own), pipelined: all at once when greeted, or --pipeline in flight. It \
            counts the answers by status: `ok`, `too_many_listens` (the server's \
            --max-listens-per-connection) or another, which ends the run (exit status 77) once the \
            flood is answered, as does a write or read refused before it. Meanwhile one connection writes to \
            `load/flood/x` and one reads `/load/other` (a `g` request), each one request at a time, \
            the next once the last is answered; their latencies are reported before the flood \
            (--baseline-seconds), during it (until every listen is answered), and for \
            --baseline-seconds after it, the flood's listens still held.

            The tool samples the server's resident memory (VmRSS in /proc/<pid>/status) every 100 ms \
            and reads its /metrics (canopy_limit_trips_total{limit="listens_per_connection"}, \
            canopy_listeners_active, which must go back down when the flooding connection closes). \
            Needs the server's pid: --launch, or --server-pid for a server started otherwise.
            """)

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Listen requests the flooding connection sends.") var listens = 200_000
    @Option(help: "Listen requests in flight at once (default: all of them, sent when the connection is greeted).")
    var pipeline: Int?
    @Option(help: "The server's cap: passed to a server --launch starts, the cap expected of one started otherwise.")
    var maxListensPerConnection = 10_000
    @Option(help: "Seconds of latency measured before the flood, and again after it.") var baselineSeconds: Double = 5
    @Option(help: "Seconds the flood may take before the listens not yet answered are given up.")
    var timeout: Double = 120
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    /// Phases of the writer's and the reader's latencies.
    static let before = 0
    static let during = 1
    static let after = 2

    func validate() throws {
        guard listens > 0, maxListensPerConnection > 0 else {
            throw ValidationError("--listens and --max-listens-per-connection must be positive")
        }
        if let pipeline, pipeline <= 0 { throw ValidationError("--pipeline must be positive") }
        guard baselineSeconds > 0, timeout > 0 else {
            throw ValidationError("--baseline-seconds and --timeout must be positive")
        }
        try launchOptions.validateServerProcess()
        _ = try options.endpoint()
    }

    func run() async throws {
        let run = try ScenarioRun(json: json, connections: 4, what: "listen-flood")
        let report = try await run.withServer(
            options, launchOptions, serverArguments: ["--max-listens-per-connection", String(maxListensPerConnection)]
        ) { server in
            try await measure(server, machine: run.machine, console: run.console)
        }
        try run.report(report)
    }

    private func measure(
        _ server: ServersUnderLoad, machine: MachineInfo, console: Console
    ) async throws -> ListenFloodReport {
        let memory = try server.sampleMemory()
        let rest = RESTWriter(server: options.server, namespace: options.namespace, token: options.authToken)
        do {
            try await rest.put("load/other", json: #"{"note":"unrelated to the flood"}"#, until: deadline(seconds: 30))
        } catch {
            await rest.shutdown()
            await memory.stop()
            throw error
        }
        await rest.shutdown()
        let writes = PhasedLatencies(phases: 3)
        let reads = PhasedLatencies(phases: 3)
        let tally = FloodTally()
        let address = options.server
        // A writer or reader the server refuses measures nothing: the run ends at once.
        let refused: @Sendable () -> LoadError? = {
            for (what, latencies) in [("writes", writes), ("reads", reads)] {
                let refusals = latencies.refusals.byStatus
                guard refusals.isEmpty else {
                    return .refused(what: what, refusals: refusals, total: Int(latencies.count), server: address)
                }
            }
            return nil
        }
        var connections: [LoadConnection] = []
        func closeAll() async {
            writes.stop()
            reads.stop()
            for connection in connections { connection.close() }
            await memory.stop()
        }
        do {
            connections.append(
                try await options.connect {
                    RequestLoopSession(latencies: writes) { Requests.put($0, path: "load/flood/x", json: String($0)) }
                })
            connections.append(
                try await options.connect {
                    RequestLoopSession(latencies: reads) { Requests.get($0, path: "/load/other") }
                })
            let cpuStart = server.cpuSeconds()
            console.line(
                "listen-flood: \(baselineSeconds) s before the flood: one connection writing load/flood/x, one "
                    + "reading /load/other, one request at a time each, against \(options.server)")
            try await measureFor(
                baselineSeconds, "before", writes: writes, reads: reads, console: console, failure: refused)
            let metricsBefore = try await MetricsSnapshot.read(from: options.server)
            let rssBefore = memory.latestBytes
            let cpuBefore = server.cpuSeconds()
            console.line(
                "listen-flood: before: write \(writes.figures(Self.before).describe()); read "
                    + "\(reads.figures(Self.before).describe())")

            // The flood.
            writes.begin(Self.during)
            reads.begin(Self.during)
            let (listens, pipeline) = (listens, pipeline ?? listens)
            let floodStarted = monotonicNanoseconds()
            connections.append(
                try await options.connect { FloodSession(listens: listens, pipeline: pipeline, tally: tally) })
            console.line("listen-flood: flooding: \(listens) listens, \(pipeline) in flight")
            let floodDeadline = deadline(seconds: timeout)
            await console.withProgress({
                String(
                    format: "listen-flood: %.1f s: %d of %d listens answered (%d ok, %d refused), write p99 %.2f ms, "
                        + "read p99 %.2f ms", Double(monotonicNanoseconds() - floodStarted) / 1e9,
                    tally.answered.load(ordering: .relaxed), listens, tally.ok.load(ordering: .relaxed),
                    tally.refused.load(ordering: .relaxed),
                    Double(writes.histogram(Self.during).valueAtPercentile(99)) / 1e6,
                    Double(reads.histogram(Self.during).valueAtPercentile(99)) / 1e6)
            }) {
                while tally.answered.load(ordering: .relaxed) < listens, !tally.closed.load(ordering: .relaxed),
                    monotonicNanoseconds() < floodDeadline
                {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            let lastAnswer = tally.lastAnswerAt.load(ordering: .relaxed)
            let floodSeconds =
                Double((lastAnswer > floodStarted ? lastAnswer : monotonicNanoseconds()) - floodStarted) / 1e9
            let cpuFlood = server.cpuSeconds()
            let rssAfterFlood = memory.latestBytes
            let metricsFlood = try await MetricsSnapshot.read(from: options.server)
            console.line(
                String(
                    format: "listen-flood: %d of %d listens answered in %.2f s: %d ok, %d too_many_listens, %d other%@",
                    tally.answered.load(ordering: .relaxed), listens, floodSeconds, tally.ok.load(ordering: .relaxed),
                    tally.refused.load(ordering: .relaxed), tally.other.load(ordering: .relaxed),
                    tally.closed.load(ordering: .relaxed) ? "; the server closed the flooding connection" : ""))
            let otherStatuses = tally.otherStatuses.byStatus
            if !otherStatuses.isEmpty {
                throw LoadError.refused(
                    what: "listens", refusals: otherStatuses, total: tally.answered.load(ordering: .relaxed),
                    server: address)
            }

            // After it, its listens still held.
            writes.begin(Self.after)
            reads.begin(Self.after)
            try await measureFor(
                baselineSeconds, "after", writes: writes, reads: reads, console: console, failure: refused)
            writes.stop()
            reads.stop()
            let stopped = await writes.waitForLoops(1, timeout: .seconds(10))
            let readStopped = await reads.waitForLoops(1, timeout: .seconds(10))
            if !stopped || !readStopped { console.line("warning: a write or read was not answered within 10 s") }

            // The flooding connection closes: its listens must go.
            let closedByServer = tally.closed.load(ordering: .relaxed)
            connections.removeLast().close()
            let listenersBefore = metricsBefore.listenersActive ?? 0
            var listenersAfterClose = (try await MetricsSnapshot.read(from: options.server)).listenersActive ?? 0
            let closeDeadline = deadline(seconds: 10)
            while listenersAfterClose > listenersBefore, monotonicNanoseconds() < closeDeadline {
                try await Task.sleep(for: .milliseconds(50))
                listenersAfterClose = (try await MetricsSnapshot.read(from: options.server)).listenersActive ?? 0
            }
            let metricsEnd = try await MetricsSnapshot.read(from: options.server)
            let answered = tally.answered.load(ordering: .relaxed)
            let expectedOk = min(listens, maxListensPerConnection)
            let writeFigures = PhaseLatencyFigures(writes)
            let readFigures = PhaseLatencyFigures(reads)
            let report = ListenFloodReport(
                scenario: "listen-flood", server: options.server, machine: machine, listens: listens,
                pipeline: pipeline, maxListensPerConnection: maxListensPerConnection,
                baselineSeconds: baselineSeconds, answered: answered, ok: tally.ok.load(ordering: .relaxed),
                refused: tally.refused.load(ordering: .relaxed), otherStatus: tally.other.load(ordering: .relaxed),
                capHeld: tally.ok.load(ordering: .relaxed) == expectedOk
                    && tally.refused.load(ordering: .relaxed) == listens - expectedOk,
                floodConnectionClosedByServer: closedByServer, floodSeconds: floodSeconds,
                answersPerSecond: Double(answered) / max(floodSeconds, 1e-9),
                listensPerConnectionTrips: metricsEnd.limitTrips("listens_per_connection")
                    - metricsBefore.limitTrips("listens_per_connection"),
                listenersActiveBefore: listenersBefore, listenersActiveAfterFlood: metricsFlood.listenersActive ?? 0,
                listenersActiveAfterClose: listenersAfterClose, write: writeFigures, read: readFigures,
                writeP99Ratio: writeFigures.during.p99Ms / max(writeFigures.before.p99Ms, 1e-9),
                readP99Ratio: readFigures.during.p99Ms / max(readFigures.before.p99Ms, 1e-9),
                writeFailures: writes.failures.load(ordering: .relaxed),
                readFailures: reads.failures.load(ordering: .relaxed), serverRSSBeforeBytes: rssBefore,
                serverPeakRSSBytes: memory.peakBytes, serverRSSAfterFloodBytes: rssAfterFlood,
                serverRSSEndBytes: memory.latestBytes,
                serverCPUBeforeSeconds: ProcessCPU.spent(from: cpuStart, to: cpuBefore),
                serverCPUFloodSeconds: ProcessCPU.spent(from: cpuBefore, to: cpuFlood))
            await closeAll()
            return report
        } catch {
            await closeAll()
            throw error
        }
    }

    /// Lets the writer and the reader run for `seconds`, showing their figures so far; throws
    /// what `failure()` says as soon as it says something.
    private func measureFor(
        _ seconds: Double, _ label: String, writes: PhasedLatencies, reads: PhasedLatencies, console: Console,
        failure: @escaping @Sendable () -> LoadError?
    ) async throws {
        let started = monotonicNanoseconds()
        let phase = writes.phase
        try await console.withProgress({
            String(
                format: "listen-flood: %@ %.1f of %g s: %d writes (p99 %.2f ms), %d reads (p99 %.2f ms)", label,
                Double(monotonicNanoseconds() - started) / 1e9, seconds, writes.histogram(phase).totalCount,
                Double(writes.histogram(phase).valueAtPercentile(99)) / 1e6, reads.histogram(phase).totalCount,
                Double(reads.histogram(phase).valueAtPercentile(99)) / 1e6)
        }) {
            // The phase lasts `seconds`, and until the writer and the reader were each answered in it:
            // on a busy machine a first answer (or refusal) can take longer than a short phase.
            let end = deadline(seconds: seconds)
            let answerDeadline = deadline(seconds: seconds + timeout)
            func answered() -> Bool { writes.histogram(phase).totalCount > 0 && reads.histogram(phase).totalCount > 0 }
            while monotonicNanoseconds() < end || !answered() {
                if let failure = failure() { throw failure }
                guard monotonicNanoseconds() < answerDeadline else {
                    throw LoadError.check(
                        "listen-flood: the writer or the reader was not answered within \(timeout) s (\(label) the flood)"
                    )
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if let failure = failure() { throw failure }
        }
    }
}

/// The flooding connection's answers.
final class FloodTally: Sendable {
    let answered = Atomic<Int>(0)
    let ok = Atomic<Int>(0)
    /// Answered `too_many_listens`.
    let refused = Atomic<Int>(0)
    /// Answered with another status, and those statuses.
    let other = Atomic<Int>(0)
    let otherStatuses = Refusals()
    /// When the last answer arrived (monotonic nanoseconds).
    let lastAnswerAt = Atomic<UInt64>(0)
    /// The connection closed.
    let closed = Atomic<Bool>(false)
}

/// The flooding connection: listens to `/load/flood/<i>` for i below `listens`, `pipeline` requests
/// in flight (the next sent as each is answered), and counts the answers by status.
final class FloodSession: LoadSession {
    private let listens: Int
    private let pipeline: Int
    private let tally: FloodTally
    private var greeted = false
    private var sent = 0
    private var answered = 0

    init(listens: Int, pipeline: Int, tally: FloodTally) {
        self.listens = listens
        self.pipeline = pipeline
        self.tally = tally
    }

    func received(_ message: String, output: inout LoadOutput) {
        guard greeted else {
            guard MessageText.isHello(message) else { return }
            greeted = true
            while sent < min(pipeline, listens) { sendOne(&output) }
            return
        }
        // Data pushes of the listens answered `ok` carry no request number.
        guard MessageText.responseNumber(message) != nil else { return }
        switch MessageText.status(message) ?? "no status" {
        case "ok": tally.ok.add(1, ordering: .relaxed)
        case "too_many_listens": tally.refused.add(1, ordering: .relaxed)
        case let status:
            tally.other.add(1, ordering: .relaxed)
            tally.otherStatuses.add(status)
        }
        answered += 1
        tally.lastAnswerAt.store(monotonicNanoseconds(), ordering: .relaxed)
        tally.answered.store(answered, ordering: .relaxed)
        if sent < listens { sendOne(&output) }
    }

    private func sendOne(_ output: inout LoadOutput) {
        output.send(Requests.listen(sent + 1, path: "/load/flood/\(sent)"))
        sent += 1
    }

    func closed() { tally.closed.store(true, ordering: .relaxed) }
}

/// Latencies before, during and after the flood.
struct PhaseLatencyFigures: Encodable {
    var before: LatencyFigures
    var during: LatencyFigures
    var after: LatencyFigures

    init(_ latencies: PhasedLatencies) {
        before = latencies.figures(ListenFlood.before)
        during = latencies.figures(ListenFlood.during)
        after = latencies.figures(ListenFlood.after)
    }
}

/// The `--json` object of a `listen-flood` run.
struct ListenFloodReport: ScenarioReport {
    var scenario: String
    var server: String
    var machine: MachineInfo
    var listens: Int
    var pipeline: Int
    var maxListensPerConnection: Int
    var baselineSeconds: Double
    var answered: Int
    var ok: Int
    var refused: Int
    var otherStatus: Int
    /// Whether exactly the cap's worth of listens was accepted and every other one refused.
    var capHeld: Bool
    var floodConnectionClosedByServer: Bool
    /// From the flooding connection's start until its last answer.
    var floodSeconds: Double
    var answersPerSecond: Double
    /// `canopy_limit_trips_total{limit="listens_per_connection"}` during the run.
    var listensPerConnectionTrips: Int
    /// `canopy_listeners_active` before the flood, after it, and after the flooding connection closed.
    var listenersActiveBefore: Int
    var listenersActiveAfterFlood: Int
    var listenersActiveAfterClose: Int
    var write: PhaseLatencyFigures
    var read: PhaseLatencyFigures
    /// p99 during the flood ÷ p99 before it.
    var writeP99Ratio: Double
    var readP99Ratio: Double
    var writeFailures: Int
    var readFailures: Int
    var serverRSSBeforeBytes: Int
    var serverPeakRSSBytes: Int
    var serverRSSAfterFloodBytes: Int
    var serverRSSEndBytes: Int
    var serverCPUBeforeSeconds: Double?
    var serverCPUFloodSeconds: Double?

    func describe() -> [String] {
        func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
        var lines = [
            "listens: \(answered) of \(listens) answered in \(String(format: "%.2f", floodSeconds)) s "
                + "(\(String(format: "%.0f", answersPerSecond))/s): \(ok) ok, \(refused) too_many_listens, "
                + "\(otherStatus) other; cap of \(maxListensPerConnection) held: \(capHeld ? "yes" : "no")",
            "limit trips (listens_per_connection): \(listensPerConnectionTrips); listeners active: "
                + "\(listenersActiveBefore) before, \(listenersActiveAfterFlood) after the flood, "
                + "\(listenersActiveAfterClose) once the flooding connection closed",
            "write load/flood/x, before: \(write.before.describe()) (\(write.before.count))",
            "write load/flood/x, during: \(write.during.describe()) (\(write.during.count))",
            "write load/flood/x, after:  \(write.after.describe()) (\(write.after.count))",
            "read /load/other, before: \(read.before.describe()) (\(read.before.count))",
            "read /load/other, during: \(read.during.describe()) (\(read.during.count))",
            "read /load/other, after:  \(read.after.describe()) (\(read.after.count))",
            String(format: "p99 during / before: write %.2f×, read %.2f×", writeP99Ratio, readP99Ratio),
            "server RSS: \(megabytes(serverRSSBeforeBytes)) before, peak \(megabytes(serverPeakRSSBytes)), "
                + "\(megabytes(serverRSSAfterFloodBytes)) after the flood, \(megabytes(serverRSSEndBytes)) at the end",
        ]
        if let serverCPUFloodSeconds {
            lines.append(String(format: "server CPU during the flood: %.2f s", serverCPUFloodSeconds))
        }
        if floodConnectionClosedByServer { lines.append("the server closed the flooding connection") }
        if writeFailures > 0 || readFailures > 0 {
            lines.append("warning: \(writeFailures) writes and \(readFailures) reads answered with an error")
        }
        return lines
    }
}
