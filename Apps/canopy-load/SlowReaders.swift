import ArgumentParser
import Foundation
import Histogram
import ProcessResources
import Synchronization

/// Stalled readers must not exhaust the server: memory stays bounded, writers that keep up stay fast.
struct SlowReaders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-readers",
        abstract: "Stalled readers against the server's outbound limits: its memory and healthy writers' latency.",
        discussion: """
            --writers healthy connections each write in a loop to their own location (`load/w/<i>`, one \
            write in flight: the next once the last is acknowledged), and one more connection sets \
            `load/hot` to --value-bytes bytes --rate times a second. For --baseline-seconds nothing \
            else happens: the writers' latency then is the unloaded baseline. Then --stalled realtime \
            connections listen to `load/hot` and, once the listen is answered, never read their socket \
            again, and --streams REST event streams of `load/hot` (raw TCP, `Accept: \
            text/event-stream`) read their response's head and nothing more; all keep their sockets \
            open, with an SO_RCVBUF of --receive-buffer bytes. The stall lasts --duration seconds after \
            every stalled reader is in place, and the writers' latency during it (from the first \
            stalled connection on) is compared with the baseline.

            The tool samples the server's resident memory (VmRSS in /proc/<pid>/status) every 100 ms \
            and reads its /metrics: canopy_limit_trips_total for pending_outbound_bytes and \
            total_pending_outbound_bytes (stalled readers the server closed) and \
            canopy_connections_open. At the end the stalled readers read again (until as many ended as \
            the server closed, or 15 s), which shows which of them, realtime or event streams, the \
            server had closed. Needs the server's pid: --launch, or --server-pid for a server started \
            otherwise.
            """)

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Realtime connections that listen to load/hot and then stop reading.") var stalled = 200
    @Option(help: "REST event streams of load/hot that stop reading after the response's head.") var streams = 50
    @Option(help: "Healthy connections writing in a loop to load/w/<i>, one write in flight each.") var writers = 10
    @Option(help: "Bytes of each value written to load/hot.") var valueBytes = 10000
    @Option(help: "Writes per second to load/hot (one connection).") var rate = 200
    @Option(help: "Seconds of stall once every stalled reader is in place.") var duration: Double = 20
    @Option(help: "Seconds of the unloaded baseline before the stall.") var baselineSeconds: Double = 5
    @Option(help: "SO_RCVBUF of the stalled readers' sockets, in bytes.") var receiveBuffer = 4096
    @Option(help: "With --launch: the server's --max-pending-outbound-bytes (default: the server's own).")
    var maxPendingOutboundBytes: Int?
    @Option(help: "With --launch: the server's --max-total-pending-outbound-bytes (default: the server's own).")
    var maxTotalPendingOutboundBytes: Int?
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    /// The location every stalled reader listens to and the hot writer sets.
    static let hotPath = "load/hot"
    /// Phases of the healthy writers' latencies.
    static let unloaded = 0
    static let stall = 1

    func validate() throws {
        guard stalled >= 0, streams >= 0, stalled + streams > 0 else {
            throw ValidationError("--stalled and --streams must not be negative, and one must be positive")
        }
        guard writers > 0, rate > 0, valueBytes > 0, receiveBuffer > 0 else {
            throw ValidationError("--writers, --rate, --value-bytes and --receive-buffer must be positive")
        }
        guard duration > 0, baselineSeconds > 0 else {
            throw ValidationError("--duration and --baseline-seconds must be positive")
        }
        try launchOptions.validateServerProcess()
        if !launchOptions.launch, maxPendingOutboundBytes != nil || maxTotalPendingOutboundBytes != nil {
            throw ValidationError("--max-pending-outbound-bytes and --max-total-pending-outbound-bytes need --launch")
        }
        _ = try options.endpoint()
    }

    /// The limits passed to a server the tool starts.
    var serverArguments: [String] {
        var arguments: [String] = []
        if let maxPendingOutboundBytes {
            arguments += ["--max-pending-outbound-bytes", String(maxPendingOutboundBytes)]
        }
        if let maxTotalPendingOutboundBytes {
            arguments += ["--max-total-pending-outbound-bytes", String(maxTotalPendingOutboundBytes)]
        }
        return arguments
    }

    func run() async throws {
        let run = try ScenarioRun(
            json: json, connections: stalled + streams + writers + 2, what: "\(stalled + streams) stalled readers")
        let report = try await run.withServer(options, launchOptions, serverArguments: serverArguments) { server in
            try await measure(server, machine: run.machine, console: run.console)
        }
        try run.report(report)
    }

    private func measure(
        _ server: ServersUnderLoad, machine: MachineInfo, console: Console
    ) async throws -> SlowReadersReport {
        let (host, port) = try options.endpoint()
        let memory = try server.sampleMemory()
        let rssStart = memory.latestBytes
        let latencies = PhasedLatencies(phases: 2)
        let hotWriter = HotWriter()
        let hot = try await options.connect { HotWriterSession(writer: hotWriter) }
        let healthy = try await connectAll(writers, options: options) { index in
            RequestLoopSession(latencies: latencies) { number in
                Requests.put(number, path: "load/w/\(index)", json: String(number))
            }
        }
        let readerTally = StallTally()
        let streamTally = StallTally()
        var readers: [LoadConnection] = []
        var streamList: [StalledStream] = []
        let (rate, valueBytes) = (rate, valueBytes)
        let hotWrites = Task { try await hotWriter.run(on: hot, rate: rate, valueBytes: valueBytes) }
        func closeAll() async {
            hotWriter.stop()
            _ = try? await hotWrites.value
            latencies.stop()
            hot.close()
            for connection in healthy + readers { connection.close() }
            for stream in streamList { stream.close() }
            await memory.stop()
        }
        do {
            let cpuStart = server.cpuSeconds()
            // The unloaded baseline: the healthy writers and the hot writer, nobody listening.
            console.line(
                "slow-readers: unloaded baseline for \(baselineSeconds) s: \(writers) writers (one write in flight "
                    + "each), \(rate) writes/s of \(valueBytes) bytes to \(Self.hotPath), against \(options.server)")
            let baselineStarted = monotonicNanoseconds()
            let baselineSeconds = baselineSeconds
            try await console.withProgress({
                String(
                    format: "slow-readers: unloaded %.1f of %g s: %d healthy writes, p99 %.2f ms",
                    Double(monotonicNanoseconds() - baselineStarted) / 1e9, baselineSeconds,
                    latencies.histogram(Self.unloaded).totalCount,
                    Double(latencies.histogram(Self.unloaded).valueAtPercentile(99)) / 1e6)
            }) {
                try await Task.sleep(for: .seconds(baselineSeconds))
            }
            let cpuUnloaded = server.cpuSeconds()
            let rssUnloaded = memory.latestBytes
            let metricsBefore = try await MetricsSnapshot.read(from: options.server)
            let openBefore = metricsBefore.connectionsOpen ?? 0
            console.line(
                String(
                    format: "slow-readers: unloaded: %@; server RSS %.1f MB, %d connections open",
                    latencies.figures(Self.unloaded).describe(), Double(rssUnloaded) / 1e6, openBefore))

            // The stall: readers that stop reading, then `duration` seconds of the same writes.
            latencies.begin(Self.stall)
            let stallStarted = monotonicNanoseconds()
            let receiveBuffer = receiveBuffer
            let (stalled, streams) = (stalled, streams)
            try await console.withProgress({
                "slow-readers: \(readerTally.stalled.load(ordering: .relaxed)) of \(stalled) realtime readers and "
                    + "\(streamTally.stalled.load(ordering: .relaxed)) of \(streams) event streams stalled"
            }) {
                readers = try await connectAll(stalled) { _ in
                    try await options.connect(receiveBufferSize: receiveBuffer) {
                        StalledReaderSession(path: Self.hotPath, tally: readerTally)
                    }
                }
                let setupDeadline = deadline(seconds: 60)
                while readerTally.stalled.load(ordering: .relaxed) + readerTally.refused.load(ordering: .relaxed)
                    + readerTally.closed.load(ordering: .relaxed) < stalled
                {
                    guard monotonicNanoseconds() < setupDeadline else {
                        throw LoadError.clientsNotReady(
                            ready: readerTally.stalled.load(ordering: .relaxed), total: stalled)
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
                streamList = try await connectAll(streams) { _ in
                    try await StalledStream.open(
                        host: host, port: port, target: "/\(Self.hotPath).json?\(options.restQuery)",
                        receiveBufferSize: receiveBuffer, tally: streamTally)
                }
            }
            let setupSeconds = Double(monotonicNanoseconds() - stallStarted) / 1e9
            let refused = readerTally.refused.load(ordering: .relaxed)
            console.line(
                String(
                    format: "slow-readers: %d realtime readers and %d event streams stalled in %.2f s%@; stalling "
                        + "for %g s", readerTally.stalled.load(ordering: .relaxed), streamList.count, setupSeconds,
                    refused > 0 ? " (\(refused) listens refused)" : "", duration))
            let watch = MetricsWatch(server: options.server, healthyOpen: openBefore, since: stallStarted)
            let stallEnd = monotonicNanoseconds() + UInt64(duration * 1e9)
            let duration = duration
            await console.withProgress({
                let seen = watch.latest
                return String(
                    format: "slow-readers: stall %.1f of %g s: %d open (%d before), %d + %d limit trips, server RSS "
                        + "%.0f MB (peak %.0f MB), healthy p99 %.2f ms, %d hot writes acked",
                    duration - Double(Int64(stallEnd) - Int64(monotonicNanoseconds())) / 1e9, duration,
                    seen.open, openBefore, seen.metrics.limitTrips("pending_outbound_bytes"),
                    seen.metrics.limitTrips("total_pending_outbound_bytes"), Double(memory.latestBytes) / 1e6,
                    Double(memory.peakBytes) / 1e6,
                    Double(latencies.histogram(Self.stall).valueAtPercentile(99)) / 1e6,
                    hotWriter.ok.load(ordering: .relaxed))
            }) {
                while monotonicNanoseconds() < stallEnd { try? await Task.sleep(for: .milliseconds(50)) }
            }
            let cpuStall = server.cpuSeconds()
            latencies.stop()
            hotWriter.stop()
            try await hotWrites.value
            let writersStopped = await latencies.waitForLoops(writers, timeout: .seconds(10))
            if !writersStopped { console.line("warning: a healthy write was not answered 10 s after the stall") }
            await watch.stop()
            let metricsAfter = try await MetricsSnapshot.read(from: options.server)
            let openAfter = metricsAfter.connectionsOpen ?? 0
            let peakRSS = memory.peakBytes
            let rssAfter = memory.latestBytes

            // Which stalled readers did the server close? Read again: a closed socket ends once what
            // the kernel still held for it was read (up to its send buffer, a few MB each), so wait
            // until as many have ended as /metrics says were closed, or 15 s.
            let closedBeforeResume = readerTally.closed.load(ordering: .relaxed)
            let stillOpen = max(0, openAfter - openBefore)
            let expectedClosed = readers.count + streamList.count - stillOpen
            for reader in readers { try? await reader.setReading(true) }
            for stream in streamList { try? await stream.setReading(true) }
            let (readerCount, streamCount) = (readers.count, streamList.count)
            let resumeStarted = monotonicNanoseconds()
            let resumeDeadline = deadline(seconds: 15)
            try await console.withProgress({
                String(
                    format: "slow-readers: reading again for %.1f s: %d of %d realtime readers and %d of %d streams "
                        + "seen closed (%d closed by the server's count)",
                    Double(monotonicNanoseconds() - resumeStarted) / 1e9, readerTally.closed.load(ordering: .relaxed),
                    readerCount, streamTally.closed.load(ordering: .relaxed), streamCount, expectedClosed)
            }) {
                while readerTally.closed.load(ordering: .relaxed) + streamTally.closed.load(ordering: .relaxed)
                    < expectedClosed, monotonicNanoseconds() < resumeDeadline
                {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let readAgainSeconds = Double(monotonicNanoseconds() - resumeStarted) / 1e9
            let readersClosed = readerTally.closed.load(ordering: .relaxed)
            let streamsClosed = streamTally.closed.load(ordering: .relaxed)

            // Every stalled reader leaves; what the server holds once they are gone, against before.
            for reader in readers { reader.close() }
            for stream in streamList { stream.close() }
            let left = try await console.withProgress({
                String(
                    format: "slow-readers: stalled readers leaving: server RSS %.0f MB (%.0f MB before the stall)",
                    Double(memory.latestBytes) / 1e6, Double(rssUnloaded) / 1e6)
            }) {
                try await Self.waitUntilLeft(server: options.server, open: openBefore, memory: memory)
            }
            let unloadedFigures = latencies.figures(Self.unloaded)
            let stallFigures = latencies.figures(Self.stall)
            let report = SlowReadersReport(
                scenario: "slow-readers", server: options.server, machine: machine, stalled: stalled,
                streams: streams, writers: writers, valueBytes: valueBytes, rate: rate, duration: duration,
                baselineSeconds: baselineSeconds, receiveBufferBytes: receiveBuffer,
                maxPendingOutboundBytes: maxPendingOutboundBytes,
                maxTotalPendingOutboundBytes: maxTotalPendingOutboundBytes, stallSetupSeconds: setupSeconds,
                unloaded: unloadedFigures, stalledLatency: stallFigures,
                p99Ratio: stallFigures.p99Ms / max(unloadedFigures.p99Ms, 1e-9),
                healthyWriteFailures: latencies.failures.load(ordering: .relaxed),
                healthyWritersClosed: latencies.closedEarly.load(ordering: .relaxed),
                hotWritesSent: hotWriter.sent.load(ordering: .relaxed),
                hotWritesAcked: hotWriter.ok.load(ordering: .relaxed),
                hotWritesRefused: hotWriter.failed.load(ordering: .relaxed),
                serverRSSStartBytes: rssStart,
                serverRSSUnloadedBytes: rssUnloaded, serverPeakRSSBytes: peakRSS, serverRSSEndBytes: rssAfter,
                serverRSSAfterReadersLeftBytes: left.rss, stalledReadersLeftAfterSeconds: left.seconds,
                rssAfterOverBefore: Double(left.rss) / Double(max(rssUnloaded, 1)),
                serverCPUUnloadedSeconds: ProcessCPU.spent(from: cpuStart, to: cpuUnloaded),
                serverCPUStallSeconds: ProcessCPU.spent(from: cpuUnloaded, to: cpuStall),
                connectionsOpenBefore: openBefore, connectionsOpenPeak: watch.peakOpen,
                connectionsOpenAfter: openAfter, allStalledGoneAfterSeconds: watch.allGoneAfter,
                pendingOutboundTrips: metricsAfter.limitTrips("pending_outbound_bytes")
                    - metricsBefore.limitTrips("pending_outbound_bytes"),
                totalPendingOutboundTrips: metricsAfter.limitTrips("total_pending_outbound_bytes")
                    - metricsBefore.limitTrips("total_pending_outbound_bytes"),
                realtimeReadersClosed: readersClosed, realtimeReadersClosedBeforeReadingAgain: closedBeforeResume,
                streamsClosed: streamsClosed, readAgainSeconds: readAgainSeconds, listensRefused: refused,
                peakUnder1GB: peakRSS < 1_000_000_000,
                rssAfterWithin1_25x: Double(left.rss) <= 1.25 * Double(rssUnloaded),
                p99Within2x: stallFigures.p99Ms <= 2 * unloadedFigures.p99Ms)
            await closeAll()
            return report
        } catch {
            await closeAll()
            throw error
        }
    }
}

extension SlowReaders {
    /// Waits until `canopy_connections_open` is back to `open` (every stalled reader gone), at most
    /// 30 s, then until the server's RSS stops falling (no reading 1 % under the lowest for 2 s,
    /// at most 20 s more); returns that RSS and the seconds until the readers were gone.
    static func waitUntilLeft(
        server: String, open: Int, memory: PeakMemorySampler
    ) async throws -> (rss: Int, seconds: Double?) {
        let started = monotonicNanoseconds()
        var seconds: Double?
        let gone = deadline(seconds: 30)
        while monotonicNanoseconds() < gone {
            if let now = try? await MetricsSnapshot.read(from: server).connectionsOpen, now <= open {
                seconds = Double(monotonicNanoseconds() - started) / 1e9
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let settled = deadline(seconds: 20)
        var lowest = memory.latestBytes
        var lowestSince = monotonicNanoseconds()
        while monotonicNanoseconds() < settled, monotonicNanoseconds() - lowestSince < 2_000_000_000 {
            try await Task.sleep(for: .milliseconds(100))
            let now = memory.latestBytes
            if Double(now) < 0.99 * Double(lowest) { lowestSince = monotonicNanoseconds() }
            lowest = min(lowest, now)
        }
        return (memory.latestBytes, seconds)
    }
}

/// The writer of `load/hot`: sets it `rate` times a second without waiting for the answers, and
/// counts them as they come (``HotWriterSession``).
final class HotWriter: Sendable {
    let sent = Atomic<Int>(0)
    let ok = Atomic<Int>(0)
    /// Writes answered with a status other than `ok`.
    let failed = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Sets `load/hot` to a string of `valueBytes` bytes (each one different) `rate` times a second
    /// on `connection`, until ``stop()``.
    func run(on connection: LoadConnection, rate: Int, valueBytes: Int) async throws {
        let filler = String(repeating: "x", count: valueBytes)
        let interval = 1e9 / Double(rate)
        let started = monotonicNanoseconds()
        var number = 0
        while !stopped.load(ordering: .relaxed) {
            let due = started + UInt64(Double(number) * interval)
            let now = monotonicNanoseconds()
            if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
            number += 1
            let head = String(number) + ":"
            connection.send(
                Requests.put(
                    number, path: SlowReaders.hotPath, json: "\"" + head + filler.dropFirst(head.utf8.count) + "\""))
            sent.add(1, ordering: .relaxed)
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}

/// The hot writer's connection: counts the answers to its writes.
final class HotWriterSession: LoadSession {
    private let writer: HotWriter

    init(writer: HotWriter) { self.writer = writer }

    func received(_ message: String, output: inout LoadOutput) {
        guard MessageText.responseNumber(message) != nil else { return }
        if MessageText.status(message) == "ok" {
            writer.ok.add(1, ordering: .relaxed)
        } else {
            writer.failed.add(1, ordering: .relaxed)
        }
    }

    func closed() {}
}

/// Reads the server's /metrics four times a second during the stall: what progress shows, the most
/// connections open, and when the stalled readers were all gone (open back to the count before).
final class MetricsWatch: Sendable {
    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)

    struct State {
        var metrics = MetricsSnapshot(text: "")
        var open = 0
        var peakOpen = 0
        var allGoneAfter: Double?
    }

    init(server: String, healthyOpen: Int, since start: UInt64) {
        state.withLock { $0.open = healthyOpen }
        let polling = Task { [weak self] in
            while !Task.isCancelled {
                if let metrics = try? await MetricsSnapshot.read(from: server), let open = metrics.connectionsOpen {
                    let now = monotonicNanoseconds()
                    guard let self else { return }
                    self.state.withLock { state in
                        state.metrics = metrics
                        state.open = open
                        state.peakOpen = Swift.max(state.peakOpen, open)
                        if state.allGoneAfter == nil, state.peakOpen > healthyOpen, open <= healthyOpen {
                            state.allGoneAfter = Double(now - start) / 1e9
                        }
                    }
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        task.withLock { $0 = polling }
    }

    var latest: State { state.withLock { $0 } }
    var peakOpen: Int { state.withLock { $0.peakOpen } }
    /// Seconds from the stall's start until the connections open were back to the healthy ones.
    var allGoneAfter: Double? { state.withLock { $0.allGoneAfter } }

    func stop() async {
        guard let polling = task.withLock({ $0.take() }) else { return }
        polling.cancel()
        await polling.value
    }
}

/// The `--json` object of a `slow-readers` run.
struct SlowReadersReport: ScenarioReport {
    var scenario: String
    var server: String
    var machine: MachineInfo
    var stalled: Int
    var streams: Int
    var writers: Int
    var valueBytes: Int
    var rate: Int
    var duration: Double
    var baselineSeconds: Double
    var receiveBufferBytes: Int
    /// The limits given to a server the tool started (`nil`: the server's own).
    var maxPendingOutboundBytes: Int?
    var maxTotalPendingOutboundBytes: Int?
    /// From the first stalled reader's connection until every one was in place.
    var stallSetupSeconds: Double
    /// The healthy writers' write latency with nobody listening (the hot writer running).
    var unloaded: LatencyFigures
    /// The same from the first stalled reader's connection to the end of the stall.
    var stalledLatency: LatencyFigures
    /// p99 during the stall ÷ p99 unloaded.
    var p99Ratio: Double
    /// Healthy writes answered with a status other than `ok`.
    var healthyWriteFailures: Int
    var healthyWritersClosed: Int
    var hotWritesSent: Int
    var hotWritesAcked: Int
    var hotWritesRefused: Int
    var serverRSSStartBytes: Int
    /// At the end of the unloaded baseline.
    var serverRSSUnloadedBytes: Int
    /// The highest of the readings every 100 ms over the whole run.
    var serverPeakRSSBytes: Int
    var serverRSSEndBytes: Int
    /// Once every stalled reader was gone and the server's RSS stopped falling.
    var serverRSSAfterReadersLeftBytes: Int
    /// Seconds from the end of reading again until `canopy_connections_open` was back to the
    /// healthy connections (`nil`: not within 30 s).
    var stalledReadersLeftAfterSeconds: Double?
    /// `serverRSSAfterReadersLeftBytes` ÷ `serverRSSUnloadedBytes`.
    var rssAfterOverBefore: Double
    var serverCPUUnloadedSeconds: Double?
    var serverCPUStallSeconds: Double?
    /// `canopy_connections_open` before the stall (the healthy ones), at its highest, and after it.
    var connectionsOpenBefore: Int
    var connectionsOpenPeak: Int
    var connectionsOpenAfter: Int
    /// Seconds from the first stalled reader until the connections open were back to the healthy
    /// ones (`nil`: not during the stall).
    var allStalledGoneAfterSeconds: Double?
    /// `canopy_limit_trips_total` during the stall: readers closed by the per-reader limit and by the
    /// limit on all of them together.
    var pendingOutboundTrips: Int
    var totalPendingOutboundTrips: Int
    /// Stalled realtime connections and event streams found closed when they read again at the end.
    var realtimeReadersClosed: Int
    /// Of those, seen closed before they read again (a server close with nothing left unread).
    var realtimeReadersClosedBeforeReadingAgain: Int
    var streamsClosed: Int
    /// How long the stalled readers read again until as many had ended as the server closed.
    var readAgainSeconds: Double
    /// Stalled readers whose listen was refused.
    var listensRefused: Int

    /// Whether the peak stayed under 1 GB (10^9 bytes).
    var peakUnder1GB: Bool
    /// Whether the RSS once the stalled readers left is within 1.25× of the RSS before the stall.
    var rssAfterWithin1_25x: Bool
    /// Whether p99 during the stall stayed within 2× the unloaded p99.
    var p99Within2x: Bool
}

extension SlowReadersReport {
    func describe() -> [String] {
        func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
        let gone =
            allStalledGoneAfterSeconds.map { String(format: "every stalled reader gone %.2f s after the first", $0) }
            ?? "stalled readers still open at the end of the stall"
        var lines = [
            "healthy writes, unloaded: \(unloaded.describe()) (\(unloaded.count) writes)",
            "healthy writes, during the stall: \(stalledLatency.describe()) (\(stalledLatency.count) writes)",
            String(
                format: "p99 during the stall / unloaded p99: %.2f× (within 2×: %@)", p99Ratio,
                p99Within2x ? "yes" : "no"),
            "server RSS: \(megabytes(serverRSSStartBytes)) at the start, \(megabytes(serverRSSUnloadedBytes)) after the "
                + "unloaded baseline, peak \(megabytes(serverPeakRSSBytes)), \(megabytes(serverRSSEndBytes)) at the end "
                + "(peak under 1 GB: \(peakUnder1GB ? "yes" : "no"))",
            String(
                format:
                    "server RSS once every stalled reader left: %@, %.2f× the %@ before the stall (within 1.25×: %@)",
                megabytes(serverRSSAfterReadersLeftBytes), rssAfterOverBefore, megabytes(serverRSSUnloadedBytes),
                rssAfterWithin1_25x ? "yes" : "no"),
            "limit trips during the stall: \(pendingOutboundTrips) pending_outbound_bytes (one reader over its limit), "
                + "\(totalPendingOutboundTrips) total_pending_outbound_bytes (all stalled readers over theirs)",
            "connections open: \(connectionsOpenBefore) before the stall, peak \(connectionsOpenPeak), "
                + "\(connectionsOpenAfter) after it; \(gone)",
            "read again at the end: \(realtimeReadersClosed) of \(stalled) realtime readers and \(streamsClosed) of "
                + "\(streams) event streams had been closed by the server (seen in "
                + String(format: "%.2f s)", readAgainSeconds),
            "hot writer: \(hotWritesSent) writes of \(valueBytes) bytes sent, \(hotWritesAcked) acknowledged, "
                + "\(hotWritesRefused) refused",
        ]
        if let serverCPUUnloadedSeconds, let serverCPUStallSeconds {
            lines.append(
                String(
                    format: "server CPU: %.2f s in the %g s unloaded, %.2f s during the stall",
                    serverCPUUnloadedSeconds, baselineSeconds, serverCPUStallSeconds))
        }
        if healthyWriteFailures > 0 || healthyWritersClosed > 0 || listensRefused > 0 {
            lines.append(
                "warning: \(healthyWriteFailures) healthy writes refused, \(healthyWritersClosed) healthy writers "
                    + "closed, \(listensRefused) stalled readers' listens refused")
        }
        return lines
    }
}
