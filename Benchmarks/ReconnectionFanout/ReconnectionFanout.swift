import Benchmark
import CanopyServer
import CanopyTesting
import Synchronization

// A reconnect storm against a server in this process: every client's socket is reset at once and
// each one connects again and listens again to its own location and to one they all share. What a
// storm costs grows with the clients and their listens, so the figures are also given per
// restored client. The clients run in a process of their own (this executable started again, see
// StormClientProcess), so the CPU time and allocations measured here are the server's.

let benchmarks: @Sendable () -> Void = {
    StormClientProcess.runIfRequested()
    for clients in [1_000, 10_000] {
        // A storm of 10,000 takes seconds: no warmup, a few iterations at most, and a bound on the
        // time (package-benchmark always completes one iteration).
        let configuration = Benchmark.Configuration(
            metrics: [
                .wallClock, .throughput, .cpuTotal, .mallocCountTotal, .cpuPerRestoredClient,
                .mallocsPerRestoredClient,
            ],
            timeUnits: .milliseconds,
            units: [.mallocCountTotal: .count, .cpuPerRestoredClient: .count, .mallocsPerRestoredClient: .count],
            warmupIterations: clients > 1_000 ? 0 : 1,
            maxDuration: .seconds(clients > 1_000 ? 20 : 10),
            maxIterations: clients > 1_000 ? 3 : 10
        )
        let fixture = FixtureHolder()
        Benchmark("reconnect storm, \(clients.grouped) clients", configuration: configuration) {
            (benchmark: Benchmark, storm: StormFixture) in
            try await storm.run(benchmark)
        } setup: {
            try await fixture.start(clients: clients)
        } teardown: {
            await fixture.stop()
        }
    }
}

extension BenchmarkMetric {
    /// The server process's CPU time for one storm, in microseconds, divided by the clients restored.
    static var cpuPerRestoredClient: BenchmarkMetric { .custom("CPU µs per restored client", useScalingFactor: false) }
    /// The server's allocations during one storm, divided by the clients restored.
    static var mallocsPerRestoredClient: BenchmarkMetric {
        .custom("mallocs per restored client", useScalingFactor: false)
    }
}

extension Int {
    /// `10000` as `10,000`.
    fileprivate var grouped: String {
        let digits = String(self)
        var groups: [Substring] = []
        var end = digits.endIndex
        while end > digits.startIndex {
            let start = digits.index(end, offsetBy: -3, limitedBy: digits.startIndex) ?? digits.startIndex
            groups.insert(digits[start..<end], at: 0)
            end = start
        }
        return groups.joined(separator: ",")
    }
}

/// The fixture of one benchmark, kept where its teardown (which is given none) finds it.
final class FixtureHolder: Sendable {
    private let fixture = Mutex<StormFixture?>(nil)

    func start(clients: Int) async throws -> StormFixture {
        let started = try await StormFixture.start(clients: clients)
        fixture.withLock { $0 = started }
        return started
    }

    func stop() async {
        let running = fixture.withLock { fixture in
            defer { fixture = nil }
            return fixture
        }
        await running?.stop()
    }
}
