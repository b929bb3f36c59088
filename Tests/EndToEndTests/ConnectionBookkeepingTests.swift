import CanopyTesting
import Dispatch
import Foundation
import Synchronization
import Testing
import Transport
import Tree

@testable import CanopyServer

/// What one connection's end changes in several places changes together: its listens leave
/// `canopy_listeners_active` in the same step as it leaves `canopy_connections_open` (no reading
/// of /metrics counts a listen of a connection it no longer counts), and a realtime connection is
/// counted, and found by a reconnect naming its session, until its onDisconnect writes ran.
///
/// Each test holds the namespace's database busy while a connection ends, so that the steps of
/// the end that need the database wait, and looks at what the server shows meanwhile.
struct ConnectionBookkeepingTests {
    /// Connections and listeners as one reading of /metrics has them.
    static func gauges(_ server: TestServer) -> (connections: Int?, listeners: Int?) {
        var values: [String: Int] = [:]
        for line in server.server.metrics.exposition().split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Double(parts[1]) else { continue }
            values[String(parts[0])] = Int(value)
        }
        return (values["canopy_connections_open"], values["canopy_listeners_active"])
    }

    /// Waits up to `timeout` for `condition`; returns whether it held.
    static func eventually(within timeout: Duration = .seconds(15), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test func anEventStreamsListenerAndConnectionLeaveTheMetricsTogether() async throws {
        try await withTestServer { server in
            var streams: [EventStreamReader] = []
            for _ in 0..<3 {
                let stream = try await server.eventStream("/hot.json?ns=test")
                _ = try await stream.nextData()
                streams.append(stream)
            }
            #expect(await server.waitForOpenConnections(3))
            #expect(Self.gauges(server).listeners == 3)
            let lease = try await server.server.databases.lease("test")
            let turn = await HeldTurn.hold(lease.database)
            for stream in streams { await stream.close() }
            // Every stream's end has run; what it changes on the database waits.
            #expect(await Self.eventually { server.server.connections.streamCount == 0 })
            let (connections, listeners) = Self.gauges(server)
            #expect(
                connections == 3 && listeners == 3,
                "connections \(String(describing: connections)), listeners \(String(describing: listeners))")
            await turn.release()
            lease.release()
            #expect(await server.waitForOpenConnections(0))
            #expect(Self.gauges(server).listeners == 0)
        }
    }

    @Test func aRealtimeConnectionCountsUntilItsOnDisconnectWritesRanItsListensWithIt() async throws {
        try await withClients(1) { server, clients in
            let observer = clients[0]
            let client = try await RealtimeTestClient.connect(to: server)
            try await client.listen("a")
            try await client.listen("b")
            try await client.requestOK(.onDisconnectPut(path: "presence/x", data: "offline"))
            try await client.put("presence/x", "online")
            #expect(await server.waitForOpenConnections(2))
            #expect(Self.gauges(server).listeners == 2)
            let session = try #require(server.server.sessions.session(client.hello.sessionID))
            let lease = try await server.server.databases.lease("test")
            let turn = await HeldTurn.hold(lease.database)
            await client.close()
            // Its close took its onDisconnect operations; running them waits for the database.
            #expect(await Self.eventually { session.isRetired })
            let (connections, listeners) = Self.gauges(server)
            #expect(
                connections == 2 && listeners == 2,
                "connections \(String(describing: connections)), listeners \(String(describing: listeners))")
            await turn.release()
            lease.release()
            #expect(await server.waitForOpenConnections(1))
            // Counted out once its writes ran, its listens in the same step.
            #expect(Self.gauges(server).listeners == 0)
            #expect(try await observer.get("presence/x") == "offline")
        }
    }

    @Test func aReconnectNamingASessionWhoseSocketClosedWaitsForItsOnDisconnectWrites() async throws {
        try await withClients(1) { server, clients in
            let observer = clients[0]
            let old = try await RealtimeTestClient.connect(to: server)
            try await old.requestOK(.onDisconnectPut(path: "presence/x", data: "offline"))
            try await old.put("presence/x", "online")
            let session = try #require(server.server.sessions.session(old.hello.sessionID))
            let lease = try await server.server.databases.lease("test")
            let turn = await HeldTurn.hold(lease.database)
            await old.close()
            #expect(await Self.eventually { session.isRetired })
            // The client is back (its old socket closed first, as after a network change) and
            // says it is online again, in the same write as its upgrade.
            let new = try await RawWebSocket.connect(
                to: server, lastSession: old.hello.sessionID,
                firstRequest: .put(path: "presence/x", data: "online", hash: nil))
            // Where the new connection does not wait for the old one's writes, it is registered
            // and its write queued on the database at once; a second is ample to see that.
            _ = await Self.eventually(within: .seconds(1)) { server.server.sessions.session(new.sessionID) != nil }
            await turn.release()
            lease.release()
            #expect(try await new.status(of: try #require(new.firstRequestNumber)) == .ok)
            #expect(try await observer.get("presence/x") == "online")
        }
    }
}

/// Holds a database's turn (its actor, blocked on a semaphore) until released: whatever the
/// server asks of that database meanwhile waits.
///
/// The blocked turn runs on a thread of its own (a task executor preference, which an actor
/// without an executor of its own follows), not on one of the cooperative pool's few threads.
final class HeldTurn: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let holding = Atomic(false)
    private let task = Mutex<Task<Void, Never>?>(nil)

    private init() {}

    /// Returns once `database`'s turn is held.
    static func hold(_ database: Database) async -> HeldTurn {
        let turn = HeldTurn()
        let task = Task(executorPreference: OwnThreadExecutor()) { await turn.block(database) }
        turn.task.withLock { $0 = task }
        while !turn.holding.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(1)) }
        return turn
    }

    private func block(_ database: isolated Database) {
        holding.store(true, ordering: .releasing)
        gate.wait()
    }

    func release() async {
        gate.signal()
        await task.withLock { $0 }?.value
    }
}

/// Runs each job on a new thread.
final class OwnThreadExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}
