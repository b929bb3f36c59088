import Benchmark
import CanopyServer
import CanopyTesting
import MallocInterposerSwift
import ProcessResources
import Synchronization

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
        try FileLimit.raise(forClients: clients)
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
        let cpuBefore = ProcessCPU.ownMicroseconds()
        let mallocsBefore = MallocInterposerSwift.getStatistics().mallocCount
        let after = try await clients.cut()
        try await waitForServerConnections()
        let mallocs = MallocInterposerSwift.getStatistics().mallocCount - mallocsBefore
        let cpu = ProcessCPU.ownMicroseconds() - cpuBefore
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
