import Benchmark
import CanopyServer
import CanopyTesting
import MallocInterposerSwift
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server in this process, with every client of a storm connected and listening.
final class StormFixture: Sendable {
    let server: TestServer
    let storm: Storm

    private init(server: TestServer, storm: Storm) {
        self.server = server
        self.storm = storm
    }

    /// Starts a server on a free port of 127.0.0.1 (data in memory, the default 20 s heartbeat),
    /// writes every client's data, then connects the clients and waits until they all listen.
    static func start(clients: Int) async throws -> StormFixture {
        // Both ends of each connection are in this process.
        try FileLimit.raise(toAtLeast: UInt64(2 * clients + 256))
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.dataDirectory = nil
        let server = try await TestServer.start(configuration: configuration)
        do {
            let seed = try await server.http(
                .PUT, "/\(StormLayout.root).json?ns=\(StormLayout.namespace)",
                body: StormLayout.seedJSON(clients: clients))
            guard seed.status == 200 else { throw StormError.seedFailed(status: seed.status, body: seed.body) }
            let storm = try Storm(clients: clients, port: server.port)
            let fixture = StormFixture(server: server, storm: storm)
            try await storm.connectAll(timeout: fixture.timeout)
            try await fixture.waitForServerConnections()
            return fixture
        } catch {
            await server.stop()
            throw error
        }
    }

    /// One measured storm: from the cut until every client has both listens answered on its new
    /// connection and the server counts only the new connections (the old ones' clean-up, whose
    /// cost grows with the listens, is part of the storm).
    func run(_ benchmark: Benchmark) async throws {
        try await waitForServerConnections()
        let pushesBefore = storm.counters.dataPushes.load(ordering: .relaxed)
        let droppedBefore = storm.counters.dropped.load(ordering: .relaxed)

        benchmark.startMeasurement()
        let cpuBefore = ProcessCPU.microseconds()
        let mallocsBefore = MallocInterposerSwift.getStatistics().mallocCount
        storm.cutAll()
        try await storm.waitUntilRestored(timeout: timeout)
        try await waitForServerConnections()
        let mallocs = MallocInterposerSwift.getStatistics().mallocCount - mallocsBefore
        let cpu = ProcessCPU.microseconds() - cpuBefore
        benchmark.stopMeasurement()

        let clients = storm.clientCount
        benchmark.measurement(.cpuPerRestoredClient, (cpu + clients / 2) / clients)
        benchmark.measurement(.mallocsPerRestoredClient, (mallocs + clients / 2) / clients)
        let pushes = storm.counters.dataPushes.load(ordering: .relaxed) - pushesBefore
        guard pushes == 0 else { throw StormError.dataResent(pushes) }
        let dropped = storm.counters.dropped.load(ordering: .relaxed) - droppedBefore
        guard dropped == 0 else { throw StormError.dropped(dropped) }
    }

    func stop() async {
        storm.stop()
        await server.stop()
    }

    /// How long a storm may take before it counts as failed: far above what it takes, so only a
    /// server that stopped restoring listens fails.
    private var timeout: Duration { .seconds(max(120, storm.clientCount / 30)) }

    /// Waits until the server counts exactly one connection per client.
    private func waitForServerConnections() async throws(StormError) {
        guard await server.waitForOpenConnections(storm.clientCount, timeout: timeout) else {
            throw .serverConnections(open: server.openConnections, expected: storm.clientCount)
        }
    }
}

/// The open-file limit (`RLIMIT_NOFILE`): a storm holds two descriptors per client.
enum FileLimit {
    /// Raises the soft limit to `needed`, and the hard limit too where the process may (as root).
    static func raise(toAtLeast needed: UInt64) throws(StormError) {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return }
        guard UInt64(limit.rlim_cur) < needed else { return }
        var raised = limit
        raised.rlim_cur = rlim_t(max(needed, UInt64(limit.rlim_max)))
        raised.rlim_max = max(raised.rlim_cur, limit.rlim_max)
        if setrlimit(resource, &raised) != 0 {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
        guard getrlimit(resource, &limit) == 0, UInt64(limit.rlim_cur) >= needed else {
            throw .fileLimit(needed: needed, limit: UInt64(limit.rlim_cur))
        }
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}

/// This process's CPU time (user and system), as `getrusage` counts it.
enum ProcessCPU {
    static func microseconds() -> Int {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + Int(usage.ru_utime.tv_usec)
            + Int(usage.ru_stime.tv_usec)
    }
}
