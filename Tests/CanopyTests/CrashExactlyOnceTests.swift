import CanopyTesting
import Foundation
import Synchronization
import Testing
import Tree

@testable import Canopy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An SDK client's increments to one counter while the real `canopy-server` that applies them is
/// killed with SIGKILL after a random number of acknowledgements: the SDK sends again what was not
/// acknowledged, and a write whose commit landed just before the kill (its answer lost) must not
/// be applied again, so the counter ends at exactly the number of increments.
///
/// Each test runs a few rounds, the kill at a random point of each (`CANOPY_CRASH_ROUNDS` sets how
/// many, for a longer manual run); the rounds' kill points are printed.
enum CrashRounds {
    static let increments = 2_000

    static var count: Int { ProcessInfo.processInfo.environment["CANOPY_CRASH_ROUNDS"].flatMap { Int($0) } ?? 3 }

    /// Sends ``increments`` increments of `counter` through `database`, kills `victim` with SIGKILL
    /// right after acknowledgement number `killAfter` (from the SDK's callback), runs `recover`, and
    /// waits until every increment was acknowledged. Returns how many were acknowledged when the
    /// kill was sent.
    static func incrementThroughAKill(
        _ database: Database, killing victim: ServerProcess, after killAfter: Int,
        recover: () async throws -> Void
    ) async throws -> Int {
        let acknowledged = Atomic(0)
        let atKill = Atomic(0)
        let failures = Recorder<String>()
        let pid = victim.pid
        for _ in 0..<increments {
            database.reference(withPath: "counter").setValue(Canopy.ServerValue.increment(1)) { error, _ in
                if let error {
                    failures.record("\(error)")
                    return
                }
                let count = acknowledged.add(1, ordering: .sequentiallyConsistent).newValue
                if count == killAfter {
                    _ = kill(pid, SIGKILL)
                    atKill.store(count, ordering: .sequentiallyConsistent)
                }
            }
        }
        let killed = await eventually(timeout: .seconds(120)) { atKill.load(ordering: .sequentiallyConsistent) > 0 }
        try #require(
            killed, "only \(acknowledged.load(ordering: .sequentiallyConsistent)) acknowledged before the kill")
        await victim.kill()
        try await recover()
        let all = await eventually(timeout: .seconds(120)) {
            acknowledged.load(ordering: .sequentiallyConsistent) + failures.all.count >= increments
        }
        #expect(all, "acknowledged \(acknowledged.load(ordering: .sequentiallyConsistent)) of \(increments)")
        #expect(failures.all.isEmpty, "increments failed: \(failures.all.prefix(5))")
        return atKill.load(ordering: .sequentiallyConsistent)
    }

    /// The value at `path` in `namespace`, read over REST from `baseURL`.
    static func value(at path: String, namespace: String, from baseURL: String) async throws -> JSONValue? {
        try await TestServer.http(baseURL: baseURL, .GET, "/\(path).json?ns=\(namespace)", timeout: .seconds(30)).json
    }

    /// The `canopy_resent_writes_total` counter of the server at `baseURL`.
    static func resentWrites(_ baseURL: String) async -> String {
        guard let metrics = try? await TestServer.http(baseURL: baseURL, .GET, "/metrics").body else { return "?" }
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("canopy_resent_writes_total ") }
        return line.map { String($0.dropFirst("canopy_resent_writes_total ".count)) } ?? "?"
    }
}

/// One server on an SQLite data folder, killed and started again on the same folder and port.
@Suite(
    .serialized,
    .enabled(
        if: ServerProcess.locateExecutable() != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct ServerCrashExactlyOnceTests {
    @Test(.timeLimit(.minutes(15)))
    func incrementsResentAfterTheServerWasKilledApplyExactlyOnce() async throws {
        let executable = try #require(ServerProcess.locateExecutable())
        for round in 1...CrashRounds.count {
            let killAfter = Int.random(in: 50...(CrashRounds.increments - 50))
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let arguments = ["--port", "\(try TestServer.reservePort())"]
            let first = try await ServerProcess.start(
                executable: executable, dataDirectory: folder, arguments: arguments)
            let database = Database(url: "\(first.baseURL)?ns=crash", connector: Database.realtimeConnector)
            let second = Mutex<ServerProcess?>(nil)
            do {
                let atKill = try await CrashRounds.incrementThroughAKill(database, killing: first, after: killAfter) {
                    let restarted = try await ServerProcess.start(
                        executable: executable, dataDirectory: folder, arguments: arguments)
                    second.withLock { $0 = restarted }
                }
                database.shutDown()
                let restarted = try #require(second.withLock { $0 })
                let counter = try await CrashRounds.value(at: "counter", namespace: "crash", from: restarted.baseURL)
                print(
                    "server crash round \(round): killed after \(atKill) acknowledgements; counter \(counter.map { "\($0)" } ?? "absent"); resends answered from the record: \(await CrashRounds.resentWrites(restarted.baseURL))"
                )
                #expect(
                    counter == .number(Double(CrashRounds.increments)),
                    "round \(round), killed after \(atKill) acknowledgements")
                await restarted.terminate()
            } catch {
                database.shutDown()
                await first.kill()
                await second.withLock { $0 }?.terminate()
                throw error
            }
        }
    }
}

/// Two servers on one PostgreSQL: the SDK, given the second node, is sent on to the first, which
/// serves the namespace; the first is killed, and the SDK, back at the second node, resends there
/// once it took the namespace over (reading the write ids the first stored).
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(
    .serialized,
    .enabled(
        if: PostgresTestCluster.isEnabled && ServerProcess.locateExecutable() != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binary"))
struct ClusterCrashExactlyOnceTests {
    /// Node `name` keeping namespaces in `cluster`, with a lease of 30 s: a takeover before it ran
    /// out is the node lock's doing (the owner died).
    static func startNode(_ name: String, _ cluster: PostgresTestCluster, folder: String) async throws -> ServerProcess
    {
        try await ServerProcess.startClusterNode(name, store: cluster, leaseSeconds: 30, folder: folder)
    }

    @Test(.timeLimit(.minutes(15)))
    func incrementsResentAfterTheOwnerWasKilledApplyExactlyOnceOnTheNewOwner() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            for round in 1...CrashRounds.count {
                let namespace = "crash\(round)"
                let killAfter = Int.random(in: 50...(CrashRounds.increments - 50))
                let owner = try await Self.startNode("owner\(round)", cluster, folder: folder)
                let other: ServerProcess
                do {
                    other = try await Self.startNode("other\(round)", cluster, folder: folder)
                } catch {
                    await owner.kill()
                    throw error
                }
                let database = Database(url: "\(other.baseURL)?ns=\(namespace)", connector: Database.realtimeConnector)
                do {
                    // Written first through the owner, which takes the namespace.
                    let created = try await TestServer.http(
                        baseURL: owner.baseURL, .PUT, "/counter.json?ns=\(namespace)", body: "0")
                    #expect(created.status == 200, "\(created.body)")
                    let atKill = try await CrashRounds.incrementThroughAKill(database, killing: owner, after: killAfter)
                    {
                    }
                    database.shutDown()
                    let counter = try await CrashRounds.value(at: "counter", namespace: namespace, from: other.baseURL)
                    let serving = try await cluster.psql(
                        "SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = '\(namespace)'")
                    print(
                        "cluster crash round \(round): owner killed after \(atKill) acknowledgements; counter \(counter.map { "\($0)" } ?? "absent"); now served by \(serving); resends answered from the record: \(await CrashRounds.resentWrites(other.baseURL))"
                    )
                    #expect(serving == "other\(round) 2", "the other node took the namespace over")
                    #expect(
                        counter == .number(Double(CrashRounds.increments)),
                        "round \(round), owner killed after \(atKill) acknowledgements\nother node:\n\(other.log.suffix(3000))"
                    )
                    await other.terminate()
                } catch {
                    database.shutDown()
                    await owner.kill()
                    await other.terminate()
                    throw error
                }
            }
        }
    }
}
