import ArgumentParser
import Foundation

/// Takeover time in a cluster: the process serving a namespace is killed (SIGKILL) while a writer
/// keeps writing through REST; measured from the kill to the first write the next owner
/// acknowledged, over many kills, and every acknowledged write checked at the end.
struct Takeover: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time from killing a namespace's owner to the first write acknowledged by the next one.",
        discussion: """
            Starts --nodes canopy-server processes on ports --port, --port + 1, … over the PostgreSQL \
            database --store (each advertising 127.0.0.1:PORT). One writer puts to the namespace \
            `takeover` through REST, one write after another, following 307 redirects to the owner and \
            moving to the next node when one does not answer, as a load balancer would. --kills times, \
            once writes flow, the owner is killed with SIGKILL and started again after the next owner \
            acknowledged a write. At the end every acknowledged write is read back.
            """)

    @Option(help: ArgumentHelp("The PostgreSQL database the nodes share.", valueName: "postgres-url"))
    var store: String

    @Option(help: "The canopy-server executable (default: beside canopy-load, then on PATH).")
    var serverBinary: String?

    @Option(help: "The first node's port; the others follow it.") var port = 9500
    @Option(help: "Nodes to run.") var nodes = 3
    @Option(help: "Owners to kill.") var kills = 20
    @Option(help: "The nodes' --lease-duration, in seconds.") var leaseDuration: Double = 5
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard nodes >= 2 else { throw ValidationError("--nodes must be at least 2") }
        guard kills >= 1 else { throw ValidationError("--kills must be at least 1") }
        guard (1...65535).contains(port), port + nodes - 1 <= 65535 else {
            throw ValidationError("--port leaves no room for \(nodes) nodes")
        }
    }

    func run() async throws {
        let run = try ScenarioRun(json: json)
        let result = try await run.withServers(launching: {
            try await ClusterNodes.start(
                count: nodes, binary: serverBinary, store: store, firstPort: port, leaseSeconds: leaseDuration,
                prefix: "takeover", console: run.console)
        }) { cluster in
            try await ClusterWriter.writing(to: cluster.launched.map(\.port)) { writer in
                var result = try await measure(cluster.launched, writer: writer, console: run.console)
                await writer.stopWriting()
                result.lostAcknowledgedWrites = try await writer.missing()
                return result
            }
        }
        try run.report(result)
        if result.lostAcknowledgedWrites > 0 {
            throw LoadError.check("\(result.lostAcknowledgedWrites) acknowledged writes are missing")
        }
    }

    private func measure(
        _ servers: [LaunchedServer], writer: ClusterWriter, console: Console
    ) async throws -> TakeoverResult {
        var takeovers: [Double] = []
        for kill in 1...kills {
            // Writes flow: the owner is the node that acknowledged the last 20.
            let flowing = writer.acknowledged + 20
            try await writer.waitUntil(timeout: .seconds(60)) { $0 >= flowing }
            let owner = writer.lastAcknowledgingPort
            guard let victim = servers.first(where: { $0.port == owner }) else {
                throw LoadError.check("no node acknowledged the last write")
            }
            let before = writer.acknowledged
            let killed = monotonicNanoseconds()
            await victim.stop(SIGKILL)
            try await writer.waitUntil(timeout: .seconds(60)) { $0 > before }
            let took = Double(writer.lastAcknowledgement - killed) / 1e6
            takeovers.append(took)
            console.progress(
                String(format: "kill %d of %d: %.1f ms to the next owner's first write", kill, kills, took))
            try await victim.start()
        }
        return TakeoverResult(
            nodes: servers.count, kills: kills, leaseSeconds: leaseDuration, takeoverMilliseconds: takeovers,
            acknowledgedWrites: writer.acknowledged, lostAcknowledgedWrites: 0)
    }
}

struct TakeoverResult: ScenarioReport {
    var nodes: Int
    var kills: Int
    var leaseSeconds: Double
    var takeoverMilliseconds: [Double]
    var acknowledgedWrites: Int
    var lostAcknowledgedWrites: Int

    func percentile(_ fraction: Double) -> Double {
        let sorted = takeoverMilliseconds.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded(.up)))]
    }

    func describe() -> [String] {
        [
            String(
                format: "takeover after SIGKILL (kill → first write acknowledged by the next owner), %d kills: "
                    + "p50 %.1f ms, p99 %.1f ms, max %.1f ms (lease %.0f s)",
                kills, percentile(0.5), percentile(0.99), takeoverMilliseconds.max() ?? 0, leaseSeconds),
            "acknowledged writes: \(acknowledgedWrites), missing at the end: \(lostAcknowledgedWrites)",
        ]
    }
}
