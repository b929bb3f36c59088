import ArgumentParser
import Foundation
import Synchronization

/// Events per second fanned out from one writer to many listeners, with write-to-event latency,
/// optionally side by side with Redis pub/sub under the same load.
struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Events/s fanned out to many listeners, with latency percentiles (optionally against Redis).",
        discussion: """
            Every listener listens to `fan/topic`; one writer connection sets it `--rate` times a \
            second to a string carrying its send time (`sent:<ns>`, plus `--padding` bytes), and each \
            listener records the time from that send to the event's arrival. A listen or a write the \
            server refuses (its rules: `permission_denied`) ends the run at once, with exit status 77; \
            a run in which no event arrived fails too.

            With `--baseline redis` the same load then runs through Redis pub/sub: as many \
            connections SUBSCRIBE to one channel, one connection PUBLISHes the same strings at the \
            same rate, spoken in RESP over SwiftNIO like the Canopy side and measured by the same \
            code; Canopy's figures are printed as ratios to Redis's. The tool starts `redis-server` \
            on a free port of 127.0.0.1 (`--save '' --appendonly no`) unless `--redis host:port` \
            names one.
            """)

    enum BaselineKind: String, ExpressibleByArgument, CaseIterable {
        case redis
    }

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Listener connections (all on one location).") var listeners = 1000
    @Option(help: "Writes per second (one writer connection).") var rate = 200
    @Option(help: "Seconds to write.") var duration: Double = 10
    @Option(help: "Bytes added to each message after its send time.") var padding = 0
    @Option(help: "Seconds to wait for the last events after the last write.") var drainTimeout: Double = 30
    @Option(help: "Run the same load through another system afterwards and print the ratios.")
    var baseline: BaselineKind?
    @Option(help: "With --baseline redis: a running Redis at host:port instead of starting one.")
    var redis: String?
    @Option(help: "With --baseline redis: the redis-server executable (default: on PATH).")
    var redisServer: String?
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard listeners > 0, rate > 0 else { throw ValidationError("--listeners and --rate must be positive") }
        guard Double(rate) * duration >= 1 else {
            throw ValidationError("--rate × --duration must be at least one write")
        }
        guard padding >= 0, drainTimeout > 0 else {
            throw ValidationError("--padding must not be negative and --drain-timeout must be positive")
        }
        if redis != nil || redisServer != nil, baseline == nil {
            throw ValidationError("--redis and --redis-server need --baseline redis")
        }
        _ = try options.endpoint()
    }

    func run() async throws {
        let run = try ScenarioRun(json: json, connections: listeners + 2, what: "\(listeners) listeners")
        let (console, machine) = (run.console, run.machine)
        let plan = FanoutPlan(
            listeners: listeners, rate: rate, duration: duration, padding: padding, drainTimeout: drainTimeout)
        let canopy = try await run.withServer(options, launchOptions) { server in
            console.line("fanout: \(listeners) listeners, \(rate) writes/s for \(duration) s against \(options.server)")
            return try await runCanopy(plan, console: console, serverCPU: server.cpuSeconds)
        }
        for line in canopy.describe() { console.line(line) }

        var redisResult: FanoutResult?
        var ratio: FanoutRatio?
        if baseline == .redis {
            let server: RedisServer
            if let redis {
                server = try RedisServer.given(redis)
            } else {
                server = try await RedisServer.launch(executable: redisServer, clients: listeners + 1, console: console)
            }
            do {
                let result = try await RedisBaseline.run(plan, server: server, console: console)
                await server.shutDown()
                for line in result.describe() { console.line(line) }
                let comparison = FanoutRatio(canopy: canopy, redis: result)
                console.line(comparison.describe())
                redisResult = result
                ratio = comparison
            } catch {
                await server.shutDown()
                throw error
            }
        }
        try console.emit(
            FanoutReport(
                scenario: "fanout", server: options.server, listeners: listeners, rate: rate, duration: duration,
                paddingBytes: padding, machine: machine, canopy: canopy, redis: redisResult, ratio: ratio))
    }

    private func runCanopy(
        _ plan: FanoutPlan, console: Console, serverCPU: @escaping @Sendable () -> Double?
    ) async throws -> FanoutResult {
        let tally = FanoutTally()
        let topic = "fan/topic"
        let expected = plan.writes
        let writes = AnswerCounts()
        let writer = try await options.connect { AnswerCountingSession(counts: writes) }
        let open = try await connectAll(plan.listeners, options: options) { _ in
            ListenerSession(topic: topic, expected: expected, tally: tally)
        }
        defer {
            writer.close()
            for connection in open { connection.close() }
        }
        let server = options.server
        let failure: @Sendable () -> LoadError? = {
            let listens = tally.listenRefusals.byStatus
            if !listens.isEmpty {
                let answered = tally.ready.load(ordering: .relaxed) + tally.listenRefusals.total
                return .refused(what: "listens", refusals: listens, total: answered, server: server)
            }
            let refusedWrites = writes.refusals.byStatus
            guard refusedWrites.isEmpty else {
                return .refused(what: "writes", refusals: refusedWrites, total: writes.answered, server: server)
            }
            return nil
        }
        return try await FanoutDriver.run(
            plan, target: "canopy", tally: tally, console: console, serverCPU: serverCPU, failure: failure
        ) { number, text in
            writer.send(Requests.put(number, path: topic, json: "\"" + text + "\""))
        }
    }
}

/// Canopy's figures over Redis's, from one run of each under the same load.
struct FanoutRatio: Encodable {
    /// Canopy events/s ÷ Redis events/s: 1 is as fast, 0.5 half as fast.
    var eventsPerSecond: Double
    /// Canopy p50 latency ÷ Redis p50 latency: above 1 is slower.
    var p50Latency: Double
    var p99Latency: Double

    init(canopy: FanoutResult, redis: FanoutResult) {
        eventsPerSecond = canopy.eventsPerSecond / max(redis.eventsPerSecond, 1e-9)
        p50Latency = canopy.latency.p50Ms / max(redis.latency.p50Ms, 1e-9)
        p99Latency = canopy.latency.p99Ms / max(redis.latency.p99Ms, 1e-9)
    }

    func describe() -> String {
        String(
            format: "canopy / redis: %.2f× the events/s, %.2f× the p50 latency, %.2f× the p99 latency",
            eventsPerSecond, p50Latency, p99Latency)
    }
}

/// The `--json` object of a fan-out run.
struct FanoutReport: Encodable {
    var scenario: String
    var server: String
    var listeners: Int
    var rate: Int
    var duration: Double
    var paddingBytes: Int
    var machine: MachineInfo
    var canopy: FanoutResult
    var redis: FanoutResult?
    var ratio: FanoutRatio?
}

/// One Canopy listener: listens to the topic, then records every event until `expected`.
final class ListenerSession: LoadSession {
    private let topic: String
    private var recorder: EventRecorder
    private var ready = false

    init(topic: String, expected: Int, tally: FanoutTally) {
        self.topic = topic
        recorder = EventRecorder(expected: expected, tally: tally)
    }

    func received(_ message: String, output: inout LoadOutput) {
        if ready {
            recorder.record(message)
        } else if MessageText.isHello(message) {
            output.send(Requests.listen(1, path: topic))
        } else if MessageText.responseNumber(message) == 1 {
            let status = MessageText.status(message) ?? "no status"
            guard status == "ok" else {
                recorder.tally.listenRefusals.add(status)
                return
            }
            ready = true
            recorder.tally.ready.add(1, ordering: .relaxed)
        }
    }

    func closed() { recorder.closed() }
}
