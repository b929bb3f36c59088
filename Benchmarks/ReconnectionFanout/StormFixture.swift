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

/// A server in this process, and a storm's clients in a process of their own
/// (``StormClientProcess``), every one connected and listening.
final class StormFixture: Sendable {
    let server: TestServer
    let clients: StormClients
    private let counts: Mutex<StormClients.Counts>

    private init(server: TestServer, clients: StormClients, counts: StormClients.Counts) {
        self.server = server
        self.clients = clients
        self.counts = Mutex(counts)
    }

    /// Starts a server on a free port of 127.0.0.1 (data in memory, the default 20 s heartbeat),
    /// writes every client's data, then starts the client process and waits until every client listens.
    static func start(clients: Int) async throws -> StormFixture {
        try FileLimit.raise(toAtLeast: UInt64(clients + 256))
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.dataDirectory = nil
        let server = try await TestServer.start(configuration: configuration)
        do {
            let seed = try await server.http(
                .PUT, "/\(StormLayout.root).json?ns=\(StormLayout.namespace)",
                body: StormLayout.seedJSON(clients: clients))
            guard seed.status == 200 else { throw StormError.seedFailed(status: seed.status, body: seed.body) }
            let timeout = Self.timeout(clients: clients)
            let process = try StormClients(clients: clients, port: server.port, timeout: timeout)
            do {
                let counts = try await process.connect()
                let fixture = StormFixture(server: server, clients: process, counts: counts)
                try await fixture.waitForServerConnections()
                return fixture
            } catch {
                process.stop()
                throw error
            }
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
        let before = counts.withLock { $0 }

        benchmark.startMeasurement()
        let cpuBefore = ProcessCPU.microseconds()
        let mallocsBefore = MallocInterposerSwift.getStatistics().mallocCount
        let after = try await clients.cut()
        try await waitForServerConnections()
        let mallocs = MallocInterposerSwift.getStatistics().mallocCount - mallocsBefore
        let cpu = ProcessCPU.microseconds() - cpuBefore
        benchmark.stopMeasurement()

        counts.withLock { $0 = after }
        let clientCount = clients.clientCount
        benchmark.measurement(.cpuPerRestoredClient, (cpu + clientCount / 2) / clientCount)
        benchmark.measurement(.mallocsPerRestoredClient, (mallocs + clientCount / 2) / clientCount)
        guard after.dataPushes == before.dataPushes else {
            throw StormError.dataResent(after.dataPushes - before.dataPushes)
        }
        guard after.dropped == before.dropped else { throw StormError.dropped(after.dropped - before.dropped) }
    }

    func stop() async {
        clients.stop()
        await server.stop()
    }

    /// How long a storm may take before it counts as failed: far above what it takes, so only a
    /// server that stopped restoring listens fails.
    private static func timeout(clients: Int) -> Duration { .seconds(max(120, clients / 30)) }

    /// Waits until the server counts exactly one connection per client.
    private func waitForServerConnections() async throws(StormError) {
        let expected = clients.clientCount
        guard await server.waitForOpenConnections(expected, timeout: Self.timeout(clients: expected)) else {
            throw .serverConnections(open: server.openConnections, expected: expected)
        }
    }
}

/// The open-file limit (`RLIMIT_NOFILE`): each process of a storm holds one descriptor per client.
enum FileLimit {
    /// Raises the soft limit to `needed`, and the hard limit too where the process may.
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
