import CanopyTesting
import Foundation
import Synchronization
import Testing
import Transport
import Tree

/// The real `canopy-server` process, killed with SIGKILL (or stopped with SIGTERM) while clients
/// write: every write it acknowledged must be there after a restart on the same folder.
///
/// Needs the executable built beside the tests (`swift build --build-tests` builds it; plain
/// `swift test` may not): the test is skipped, saying so, when it is missing.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct DurabilityTests {
    @Test(.timeLimit(.minutes(5)))
    func everyAcknowledgedWriteSurvivesSIGKILL() async throws {
        try await writeThenStop { server in
            await server.kill()
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func sigtermClosesConnectionsFinishesCommitsAndExitsCleanly() async throws {
        try await writeThenStop { server in
            let asked = ContinuousClock.now
            await server.terminate()
            let took = ContinuousClock.now - asked
            #expect(server.exitStatus == 0, "log:\n\(server.log)")
            // A functional bound: shutdown closes the realtime connections instead of waiting for them.
            #expect(took < .seconds(10), "shutdown took \(took)")
        }
    }

    /// Starts the real server, has writers write over WebSocket until 1,000 writes were
    /// acknowledged, stops the server with `stop` while they keep writing, restarts it on the same
    /// folder and checks that every acknowledged write is there.
    func writeThenStop(_ stop: (ServerProcess) async throws -> Void) async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let namespace = "durable"
        let writerCount = 4

        let first = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        let acknowledged = Acknowledged()
        // Every writer is connected before any writes: one still connecting when the first ones
        // reach the count below would meet the stopped server (seen in CI).
        var clients: [RealtimeTestClient] = []
        for _ in 0..<writerCount {
            clients.append(try await RealtimeTestClient.connect(url: first.webSocketURL(namespace: namespace)))
        }
        let writers = Task { [clients] in
            await withTaskGroup(of: Void.self) { group in
                for (writer, client) in clients.enumerated() {
                    group.addTask {
                        await Self.write(as: writer, with: client) { sequence in
                            acknowledged.record(sequence, by: writer)
                        }
                        await client.close()
                    }
                }
            }
        }

        // Stop once enough writes were acknowledged, while the writers keep going.
        let deadline = ContinuousClock.now + .seconds(120)
        while acknowledged.count < 1000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await stop(first)
        await writers.value
        let acked = acknowledged.byWriter
        let total = acked.values.reduce(0) { $0 + $1.count }
        #expect(total >= 200, "only \(total) writes were acknowledged before the deadline; log:\n\(first.log)")

        let second = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        do {
            try await Self.expectPresent(acked, namespace: namespace, on: second)
        } catch {
            await second.terminate()
            throw error
        }
        await second.terminate()
    }

    /// Checks that every acknowledged write is stored on `server`.
    static func expectPresent(_ acked: [Int: [Int]], namespace: String, on server: ServerProcess) async throws {
        let response = try await TestServer.http(
            baseURL: server.baseURL, .GET, "/.json?ns=\(namespace)", timeout: .seconds(60))
        #expect(response.status == 200)
        let data = try #require(response.json)
        var missing: [String] = []
        for (writer, sequences) in acked {
            for sequence in sequences where data["w\(writer)"]?["s\(sequence)"] != .number(Double(sequence)) {
                missing.append("w\(writer)/s\(sequence)")
            }
            let latest = data["latest"]?["w\(writer)"]?.numberValue ?? -1
            let lastMerged = sequences.filter { $0 % 5 == 0 }.max() ?? -1
            #expect(latest >= Double(lastMerged), "writer \(writer): latest \(latest) < acknowledged \(lastMerged)")
        }
        let total = acked.values.reduce(0) { $0 + $1.count }
        #expect(missing.isEmpty, "\(missing.count) of \(total) acknowledged writes are missing: \(missing.prefix(20))")
    }

    /// Writes `w<writer>/s<n> = n` (every fifth as a merge that also sets `latest/w<writer>`),
    /// keeping four requests in flight, until the connection fails; reports each acknowledged `n`.
    static func write(
        as writer: Int, with client: RealtimeTestClient, acknowledged: @Sendable (Int) -> Void
    ) async {
        func action(_ sequence: Int) -> ClientAction {
            let value = JSONValue.number(Double(sequence))
            if sequence % 5 == 0 {
                return .merge(path: "/", data: ["w\(writer)/s\(sequence)": value, "latest/w\(writer)": value])
            }
            return .put(path: "w\(writer)/s\(sequence)", data: value, hash: nil)
        }
        var inFlight: [(number: Int, sequence: Int)] = []
        var next = 0
        do {
            while true {
                while inFlight.count < 4 {
                    inFlight.append((try await client.send(action(next)), next))
                    next += 1
                }
                let oldest = inFlight.removeFirst()
                guard try await client.response(to: oldest.number, timeout: .seconds(30)).isOK else { return }
                acknowledged(oldest.sequence)
            }
        } catch {
            return
        }
    }
}

/// The sequence numbers each writer got `ok` for.
private final class Acknowledged: Sendable {
    private let sequences = Mutex<[Int: [Int]]>([:])

    func record(_ sequence: Int, by writer: Int) {
        sequences.withLock { $0[writer, default: []].append(sequence) }
    }

    var byWriter: [Int: [Int]] { sequences.withLock { $0 } }

    var count: Int { sequences.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}
