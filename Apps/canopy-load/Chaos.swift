import ArgumentParser
import Dispatch
import Foundation
import Logging
import PostgresStore

/// Random faults on a cluster for as long as asked: the node serving a namespace is killed
/// (SIGKILL), paused past its lease (SIGSTOP, then SIGCONT) or stopped (SIGTERM), one fault after
/// another, while a writer keeps writing; at the end every acknowledged write must be there.
struct Chaos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Random faults on a cluster for --duration seconds; fails if an acknowledged write is lost.",
        discussion: """
            Starts --nodes canopy-server processes on ports --port, --port + 1, … over the PostgreSQL \
            database --store. One writer puts to the namespace `chaos` through REST, one write after \
            another, following redirects and moving on from a node that does not answer. Once writes \
            flow, a fault chosen at random (--seed) hits the node that acknowledged the last write: \
            kill (SIGKILL, started again once another node took over), pause (SIGSTOP until another \
            node took over, then SIGCONT: it must step down by itself) or stop (SIGTERM, started \
            again). Each fault's recovery time is from the fault to the next acknowledged write. After \
            each recovery the namespace's owner is read from PostgreSQL (`canopy_owner`): its epoch \
            must be higher than before the fault, since another node took the namespace. At the end \
            every acknowledged write is read back; the command fails if one is missing, an epoch did \
            not rise, or a fault was never recovered from.

            --clients Canopy SDK instances, configured with the nodes in turn, listen to the \
            namespace throughout, and on each connection register an onDisconnect increment of a \
            counter of that connection's own. At the end, once every node runs again, each client \
            must have seen every acknowledged write, and each ended connection's operation must have \
            run exactly once (the live one's not at all; one the SDK sent again after its connection \
            dropped unanswered may also have run on the first), or the command fails.
            """)

    @Option(help: ArgumentHelp("The PostgreSQL database the nodes share.", valueName: "postgres-url"))
    var store: String

    @Option(help: "The canopy-server executable (default: beside canopy-load, then on PATH).")
    var serverBinary: String?

    @Option(help: "The first node's port; the others follow it.") var port = 9600
    @Option(help: "Nodes to run.") var nodes = 3
    @Option(help: "How long to keep causing faults, in seconds.") var duration: Double = 60
    @Option(help: "The seed of the fault sequence (the same seed, the same faults).") var seed: UInt64 = 1
    @Option(help: "Canopy SDK instances listening throughout, with an onDisconnect operation per connection.")
    var clients = 3
    @Option(help: "The nodes' --lease-duration, in seconds (a paused node is replaced after it).")
    var leaseDuration: Double = 2
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    static let storeLogger = Logger(label: "canopy-load.owner")

    func validate() throws {
        guard nodes >= 2 else { throw ValidationError("--nodes must be at least 2") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        guard clients >= 0 else { throw ValidationError("--clients must not be negative") }
        guard leaseDuration >= 1 else { throw ValidationError("--lease-duration must be at least 1") }
        guard (1...65535).contains(port), port + nodes - 1 <= 65535 else {
            throw ValidationError("--port leaves no room for \(nodes) nodes")
        }
    }

    func run() async throws {
        let run = try ScenarioRun(json: json)
        let (report, outcome) = try await run.withServers(launching: {
            try await ClusterNodes.start(
                count: nodes, binary: serverBinary, store: store, firstPort: port, leaseSeconds: leaseDuration,
                prefix: "chaos", console: run.console, note: "; seed \(seed)")
        }) { cluster in
            // A paused node accepts connections and never answers: the writer gives up on it after 1 s.
            try await ClusterWriter.writing(
                to: cluster.launched.map(\.port), namespace: "chaos", requestTimeout: .seconds(1)
            ) { writer in
                await causeFaultsAndCheck(cluster.launched, writer: writer, console: run.console)
            }
        }
        try run.report(report)
        try outcome.get()
        if report.lostAcknowledgedWrites > 0 {
            throw LoadError.check("\(report.lostAcknowledgedWrites) acknowledged writes are missing")
        }
        let problems = report.clients.flatMap(\.problems)
        if !problems.isEmpty { throw LoadError.check(problems.joined(separator: "; ")) }
        if let behind = report.clientsMissingWrites.firstIndex(where: { $0 > 0 }) {
            throw LoadError.check(
                "client \(behind) never saw \(report.clientsMissingWrites[behind]) of the acknowledged writes")
        }
    }

    /// Faults for `duration` while the SDK clients listen, then, once every node runs again and the
    /// writes stopped, every acknowledged write read back and the clients checked. Returns the
    /// figures and the first failure, if any: the figures are reported either way.
    private func causeFaultsAndCheck(
        _ servers: [LaunchedServer], writer: ClusterWriter, console: Console
    ) async -> (ChaosReport, Result<Void, any Error>) {
        let callbacks = DispatchQueue(label: "canopy-load.chaos-clients")
        let sdkClients = (0..<clients).map { index in
            ChaosClient(index: index, url: "http://127.0.0.1:\(port + index % nodes)?ns=chaos", queue: callbacks)
        }
        for client in sdkClients { client.start() }
        var report = ChaosReport(nodes: nodes, seconds: duration, seed: seed, leaseSeconds: leaseDuration)
        let outcome: Result<Void, any Error>
        do {
            try await causeFaults(servers, writer: writer, report: &report, console: console)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await writer.stopWriting()
        // Every node back before the read: a paused one is resumed (a fault may have failed while it
        // was stopped), a stopped one started.
        for server in servers where server.pid != 0 { _ = kill(server.pid, SIGCONT) }
        for server in servers where server.pid == 0 { _ = try? await server.start() }
        report.acknowledgedWrites = writer.acknowledged
        let checked: Result<Void, any Error>
        do {
            report.lostAcknowledgedWrites = try await writer.missing()
            if case .success = outcome {
                try await checkClients(sdkClients, writer: writer, report: &report, console: console)
            }
            checked = .success(())
        } catch {
            checked = .failure(error)
        }
        for client in sdkClients { client.stop() }
        return (report, outcome.flatMap { checked })
    }

    /// Once every node runs again: waits (up to 60 s) until every SDK client has seen every
    /// acknowledged write, then reads the onDisconnect counters and checks them against what each
    /// client saw of its connections.
    private func checkClients(
        _ sdkClients: [ChaosClient], writer: ClusterWriter, report: inout ChaosReport, console: Console
    ) async throws {
        guard !sdkClients.isEmpty else { return }
        let acknowledged = writer.acknowledgedSequence
        let deadline = ContinuousClock.now + .seconds(60)
        while sdkClients.contains(where: { $0.missing(of: acknowledged) > 0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        report.clientsMissingWrites = sdkClients.map { $0.missing(of: acknowledged) }
        let counters = try await writer.read("disconnects") as? [String: Any] ?? [:]
        report.clients = sdkClients.map { client in
            let own = counters["c\(client.index)"] as? [String: Any] ?? [:]
            var runs: [Int: Int] = [:]
            for (key, value) in own {
                guard key.hasPrefix("k"), let connection = Int(key.dropFirst()) else { continue }
                runs[connection] = (value as? NSNumber)?.intValue ?? 0
            }
            return client.check(runs: runs)
        }
    }

    /// The process serving the namespace the writer writes to, as the store's lease table says.
    private func currentOwner() async throws -> NamespaceOwner {
        let location = try PostgresLocation(store)
        guard let owner = try await PostgresStorage.owner(of: "chaos", at: location, logger: Self.storeLogger) else {
            throw LoadError.check("no process owns namespace chaos in \(store), though writes were acknowledged")
        }
        return owner
    }

    private func causeFaults(
        _ servers: [LaunchedServer], writer: ClusterWriter, report: inout ChaosReport, console: Console
    ) async throws {
        var random = SplitMix64(seed: seed)
        let deadline = ContinuousClock.now + .seconds(duration)
        try await writer.waitUntil(timeout: .seconds(60)) { $0 >= 1 }
        var owner = try await currentOwner()
        report.epochs.append(owner.epoch)
        while ContinuousClock.now < deadline {
            // Writes flow, and the owner is the node that acknowledged the last 20.
            let flowing = writer.acknowledged + 20
            try await writer.waitUntil(timeout: .seconds(60)) { $0 >= flowing }
            guard let victim = servers.first(where: { $0.port == writer.lastAcknowledgingPort }) else {
                throw LoadError.check("no node acknowledged the last write")
            }
            let fault = ChaosFault.allCases[Int(random.next() % UInt64(ChaosFault.allCases.count))]
            let before = writer.acknowledged
            let started = monotonicNanoseconds()
            switch fault {
            case .kill: await victim.stop(SIGKILL)
            case .pause: _ = kill(victim.pid, SIGSTOP)
            case .stop: await victim.stop(SIGTERM)
            }
            do {
                // Recovered once another node acknowledged a write: one the stopped node answered
                // while it shut down does not count.
                try await writer.waitUntil(timeout: .seconds(60)) {
                    $0 > before && writer.lastAcknowledgingPort != victim.port
                }
            } catch {
                if fault == .pause { _ = kill(victim.pid, SIGCONT) }
                throw LoadError.check(
                    "no write was acknowledged within 60 s of a \(fault.rawValue) of node \(victim.port)")
            }
            let took = Double(writer.lastAcknowledgement - started) / 1e6
            report.record(fault, milliseconds: took)
            let next = try await currentOwner()
            report.epochs.append(next.epoch)
            guard next.epoch > owner.epoch else {
                if fault == .pause { _ = kill(victim.pid, SIGCONT) }
                throw LoadError.check(
                    "after a \(fault.rawValue) of node \(victim.port), the namespace's epoch is \(next.epoch) "
                        + "(\(next.node)); it was \(owner.epoch) (\(owner.node)) before")
            }
            owner = next
            console.progress(
                String(
                    format: "%@ of the owner (port %d): next acknowledged write after %.1f ms", fault.rawValue,
                    victim.port, took))
            switch fault {
            case .kill, .stop: try await victim.start()
            case .pause: _ = kill(victim.pid, SIGCONT)
            }
            // A quiet spell of 0 to 2 s before the next fault.
            try await Task.sleep(for: .milliseconds(Int(random.next() % 2000)))
        }
    }
}

enum ChaosFault: String, CaseIterable, Encodable {
    case kill, pause, stop
}

struct ChaosReport: ScenarioReport {
    var nodes: Int
    var seconds: Double
    var seed: UInt64
    var leaseSeconds: Double
    /// Recovery times (fault → next acknowledged write) by fault.
    var recoveryMilliseconds: [String: [Double]] = [:]
    var acknowledgedWrites = 0
    var lostAcknowledgedWrites = 0
    /// The namespace's epoch once writes flowed, then after each fault's recovery (each higher).
    var epochs: [Int64] = []
    /// Per SDK client, the acknowledged writes it had not seen at the end (all 0 once converged).
    var clientsMissingWrites: [Int] = []
    /// Per SDK client, its connections and the check of their onDisconnect operations.
    var clients: [ChaosClientCheck] = []

    init(nodes: Int, seconds: Double, seed: UInt64, leaseSeconds: Double) {
        self.nodes = nodes
        self.seconds = seconds
        self.seed = seed
        self.leaseSeconds = leaseSeconds
    }

    mutating func record(_ fault: ChaosFault, milliseconds: Double) {
        recoveryMilliseconds[fault.rawValue, default: []].append(milliseconds)
    }

    func describe() -> [String] {
        var lines = ChaosFault.allCases.compactMap { fault -> String? in
            guard let times = recoveryMilliseconds[fault.rawValue]?.sorted(), let worst = times.last else { return nil }
            return String(
                format: "%@: %d faults, recovery p50 %.1f ms, max %.1f ms", fault.rawValue, times.count,
                times[times.count / 2], worst)
        }
        lines.append("acknowledged writes: \(acknowledgedWrites), missing at the end: \(lostAcknowledgedWrites)")
        if let first = epochs.first, let last = epochs.last {
            lines.append("epochs: \(first) → \(last), rising at each of \(epochs.count - 1) faults")
        }
        if !clients.isEmpty {
            let converged = clientsMissingWrites.count { $0 == 0 }
            let ended = clients.reduce(0) { $0 + $1.endedConnections }
            let runs = clients.reduce(0) { $0 + $1.runs }
            let problems = clients.reduce(0) { $0 + $1.problems.count }
            lines.append(
                "SDK clients: \(converged) of \(clients.count) saw every acknowledged write; \(ended) connections "
                    + "ended, \(runs) onDisconnect runs, \(problems) not exactly once")
        }
        return lines
    }
}

/// A small seeded generator (SplitMix64), so that a seed replays the same faults.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
