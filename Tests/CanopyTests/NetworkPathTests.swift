import CanopyServer
import CanopyTesting
import Foundation
import RealtimeClientSocket
import Synchronization
import Testing

@testable import Canopy

/// A network path the test sets, as a device's Wi-Fi going off and on would report it.
final class ScriptedNetworkPath: NetworkPathMonitor {
    private struct State {
        var status: NetworkPathStatus
        var watches: [AsyncStream<NetworkPathStatus>.Continuation] = []
    }

    private let state: Mutex<State>

    init(_ status: NetworkPathStatus) { state = Mutex(State(status: status)) }

    func pathUpdates() -> AsyncStream<NetworkPathStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkPathStatus.self)
        state.withLock { state in
            continuation.yield(state.status)
            state.watches.append(continuation)
        }
        return stream
    }

    func report(_ status: NetworkPathStatus) {
        state.withLock { state in
            state.status = status
            for watch in state.watches { watch.yield(status) }
        }
    }
}

/// The network path: the client reconnects at once when it comes back instead of waiting out its
/// backoff, and drops a connection to another host when it goes away, as Firebase's SDK does with
/// the system's reachability.
@Suite(.timeLimit(.minutes(2)))
struct NetworkPathTests {
    /// A backoff so long (18 to 60 minutes before the next attempt) that only a network path event
    /// explains a reconnect within a test.
    static let hourLongBackoff = ReconnectBackoff(minimum: .seconds(3600), maximum: .seconds(3600))

    static func database(host: String, port: Int, path: ScriptedNetworkPath) -> Database {
        let database = Database(url: "http://\(host):\(port)?ns=test", connector: Database.realtimeConnector)
        database.networkPathMonitor = path
        database.reconnectBackoff = hourLongBackoff
        return database
    }

    static func recordConnected(_ database: Database) -> Recorder<Bool> {
        let connected = Recorder<Bool>()
        database.reference(withPath: ".info/connected").observe(.value) { connected.record($0.value as? Bool ?? false) }
        return connected
    }

    @Test func theClientReconnectsAtOnceWhenThePathComesBack() async throws {
        let port = try TestServer.reservePort()
        let path = ScriptedNetworkPath(.satisfied)
        let database = Self.database(host: "127.0.0.1", port: port, path: path)
        defer { database.shutDown() }
        // The first attempt is made once the server listens: a refused one would wait an hour.
        let connected = try await withTestServer(configure: { $0.port = port }) { _ in
            let connected = Self.recordConnected(database)
            #expect(await connected.wait { $0.last == true }, "\(connected.all)")
            // The path goes away: a connection to this machine does not need it, and stays.
            path.report(.unsatisfied)
            #expect(await eventually { database.repo?.state.withLock { $0.networkPath } == .unsatisfied })
            let answer = Recorder<String>()
            database.reference(withPath: "kept").setValue(true) { error, _ in
                answer.record(error.map { "\($0)" } ?? "ok")
            }
            #expect(await answer.wait { !$0.isEmpty } && answer.all == ["ok"], "\(answer.all)")
            #expect(connected.all == [false, true])
            return connected
        }
        // The server is gone; the client waits out its backoff (at least 18 minutes).
        #expect(await connected.wait { $0.last == false }, "\(connected.all)")
        let write: WriteStatus = database.reference(withPath: "note").setValue("written while the server was away")
        try await withTestServer(configure: { $0.port = port }) { server in
            path.report(.satisfied)
            try #require(
                await connected.wait(timeout: .seconds(30)) { $0.last == true },
                "the client did not reconnect when the path came back: \(connected.all)")
            try await write.acknowledged
            let landed = try await makeDatabase(server).reference(withPath: "note").getData()
            #expect(landed.value as? String == "written while the server was away")
        }
    }

    /// The server listens on this host's end of a private link (not loopback), so the connection
    /// is one the network path carries.
    @Test(.enabled(if: NetworkNamespace.isAvailable, "needs root and iproute2"))
    func theClientDropsAConnectionToAnotherHostWhenThePathGoesAway() async throws {
        let network = try await NetworkNamespace.create()
        do {
            try await withTestServer(configure: {
                $0.host = network.hostAddress
                // As on loopback, a client's first write creates the namespace.
                $0.createsNamespaces = true
            }) { server in
                let path = ScriptedNetworkPath(.satisfied)
                let database = Self.database(host: network.hostAddress, port: server.port, path: path)
                defer { database.shutDown() }
                let connected = Self.recordConnected(database)
                #expect(await connected.wait { $0.last == true }, "\(connected.all)")
                path.report(.unsatisfied)
                #expect(
                    await connected.wait { $0.last == false },
                    "the connection outlived the network path: \(connected.all)")
                path.report(.satisfied)
                #expect(
                    await connected.wait(timeout: .seconds(30)) { $0.last == true },
                    "the client did not reconnect when the path came back: \(connected.all)")
            }
        } catch {
            await network.remove()
            throw error
        }
        await network.remove()
    }

    @Test func aConnectionToThisMachineDoesNotDependOnThePath() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "LocalHost", "app.localhost", "::1"] {
            #expect(Repo.isLoopback(host: host), "\(host)")
        }
        for host in ["10.201.0.1", "127.example.com", "127.0.0", "example.com", "::2", "fe80::1"] {
            #expect(!Repo.isLoopback(host: host), "\(host)")
        }
    }
}
