import CanopyTesting
import Foundation
import ProcessResources
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real `canopy-load` binary at a tiny size: each scenario runs to the end and its `--json`
/// figures say every client or listener got what it should. Behaviour only: no timing is asserted.
@Suite(.timeLimit(.minutes(1)))
struct CanopyLoadTests {
    @Test func aStormCutBringsEveryClientBackWithItsListensAndTheWriteAfterTheCut() async throws {
        try await withTestServer { server in
            let (status, report, log) = try await CanopyLoad.run([
                "storm", "--server", "127.0.0.1:\(server.port)", "--clients", "20", "--cut", "--rounds", "2",
                "--timeout", "30", "--json",
            ])
            #expect(status == 0, "\(log)")
            #expect(report["allBack"] as? Bool == true, "\(log)")
            let rounds = try #require(report["rounds"] as? [[String: Any]], "\(log)")
            #expect(rounds.count == 2)
            for round in rounds {
                #expect(round["back"] as? Int == 20, "\(round)")
                #expect(round["refusedListens"] as? Int == 0, "\(round)")
                // Each client re-listened with the hash of its own unchanged data: none sent again.
                #expect(round["ownDataResent"] as? Int == 0, "\(round)")
            }
        }
    }

    @Test func aStormRestartOfALaunchedServerBringsEveryClientBack() async throws {
        let port = try TestServer.reservePort()
        let (status, report, log) = try await CanopyLoad.run([
            "storm", "--launch", "--server", "127.0.0.1:\(port)", "--clients", "20", "--restart", "kill",
            "--timeout", "30", "--json",
        ])
        #expect(status == 0, "\(log)")
        #expect(report["allBack"] as? Bool == true, "\(log)")
        let round = try #require((report["rounds"] as? [[String: Any]])?.first, "\(log)")
        #expect(round["back"] as? Int == 20, "\(round)")
        // The restarted server read the data back from its folder: the hashes still matched.
        #expect(round["ownDataResent"] as? Int == 0, "\(round)")
        #expect(round["serverDownSeconds"] is Double, "\(round)")
    }

    @Test func aStormRestartBringsEverySDKInstanceBack() async throws {
        let port = try TestServer.reservePort()
        let (status, report, log) = try await CanopyLoad.run([
            "storm", "--sdk", "--launch", "--server", "127.0.0.1:\(port)", "--clients", "10", "--restart", "term",
            "--timeout", "30", "--json",
        ])
        #expect(status == 0, "\(log)")
        #expect(report["allBack"] as? Bool == true, "\(log)")
        let round = try #require((report["rounds"] as? [[String: Any]])?.first, "\(log)")
        #expect(round["back"] as? Int == 10, "\(round)")
    }

    @Test func aFanoutDeliversEveryWriteToEveryListener() async throws {
        try await withTestServer { server in
            let (status, report, log) = try await CanopyLoad.run([
                "fanout", "--server", "127.0.0.1:\(server.port)", "--listeners", "10", "--rate", "20", "--duration",
                "1", "--json",
            ])
            #expect(status == 0, "\(log)")
            let canopy = try #require(report["canopy"] as? [String: Any], "\(log)")
            #expect(canopy["events"] as? Int == 200, "\(canopy)")
            #expect(canopy["expectedEvents"] as? Int == 200, "\(canopy)")
            #expect(canopy["listenersClosedEarly"] as? Int == 0, "\(canopy)")
        }
    }

    @Test func writesReportsEveryAcknowledgedWriteAndTheRawGRDBBaseline() async throws {
        try await withTestServer { server in
            let baseline = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: baseline) }
            let (status, report, log) = try await CanopyLoad.run([
                "writes", "--server", "127.0.0.1:\(server.port)", "--connections", "3", "--pipeline", "4",
                "--duration", "0.5", "--baseline", baseline, "--json",
            ])
            #expect(status == 0, "\(log)")
            let canopy = try #require(report["canopy"] as? [String: Any], "\(log)")
            let acked = try #require(canopy["ackedWrites"] as? Int, "\(canopy)")
            #expect(acked >= 12, "\(canopy)")
            #expect(canopy["connectionsClosedEarly"] as? Int == 0, "\(canopy)")
            #expect(canopy["commitTransactions"] is Int, "\(canopy)")
            // What the server acknowledged is in the database, each key's last value.
            let written = try await server.http(.GET, "/load/w2.json?ns=load&shallow=true")
            #expect(written.status == 200 && written.body.contains("\"k1\""), "\(written.body)")
            let baselines = try #require(report["baseline"] as? [[String: Any]], "\(log)")
            #expect(!baselines.isEmpty, "\(log)")
            for figure in baselines {
                #expect((figure["rowsPerTransaction"] as? Int ?? 0) > 0, "\(figure)")
                #expect(figure["upsertsPerSecond"] is Double && figure["ratio"] is Double, "\(figure)")
            }
        }
    }

    @Test func idleReadsTheServersMemoryBeforeAndAfterItsConnections() async throws {
        try await withTestServer { server in
            // The server runs in this process: its memory is this process's.
            let (status, report, log) = try await CanopyLoad.run([
                "idle", "--server", "127.0.0.1:\(server.port)", "--connections", "5", "--server-pid",
                String(ProcessInfo.processInfo.processIdentifier), "--json",
            ])
            #expect(status == 0, "\(log)")
            #expect(report["connections"] as? Int == 5, "\(log)")
            #expect((report["rssBeforeBytes"] as? Int ?? 0) > 0, "\(log)")
            #expect((report["rssAfterBytes"] as? Int ?? 0) > 0, "\(log)")
            #expect(report["bytesPerConnection"] is Double, "\(log)")
        }
    }

    /// An idle realtime connection costs the server its socket's channel and a few small objects:
    /// no receive buffer of NIO's default 2 KB, no scheduled task of its own for the heartbeat, no
    /// frame decoder, aggregator or copy of the server's context of its own (8.7 KB each before
    /// in a debug build, 4.3 KB since; issue 27).
    @Test(.enabled(if: FileLimit.current.hard >= 2_200), .timeLimit(.minutes(2)))
    func anIdleConnectionCostsTheServerUnderFiveKB() async throws {
        let port = try TestServer.reservePort()
        let (status, report, log) = try await CanopyLoad.run([
            "idle", "--launch", "--in-memory", "--server", "127.0.0.1:\(port)", "--connections", "2000", "--json",
        ])
        #expect(status == 0, "\(log)")
        let bytes = try #require(report["bytesPerConnection"] as? Double, "\(log)")
        #expect(bytes < 5 * 1024, "\(Int(bytes)) bytes per idle connection")
    }

    /// One source address gives a server's address and port some 28,000 ephemeral ports: a larger
    /// run against a loopback server binds its connections to 127.0.0.1, 127.0.0.2, … in turn.
    @Test func connectionsAreSpreadOverLoopbackSourceAddresses() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder, arguments: ["--log-level", "debug"])
        let (status, report, log) = try await CanopyLoad.run([
            "idle", "--server", "127.0.0.1:\(server.port)", "--connections", "5", "--connections-per-source-address",
            "2", "--server-pid", "\(server.pid)", "--json",
        ])
        await server.terminate()
        #expect(status == 0, "\(log)")
        #expect(report["connections"] as? Int == 5, "\(log)")
        let opened = server.log.split(separator: "\n").filter { $0.contains("realtime connection opened") }
        // The warm-up connection is bound to no address (the system picks 127.0.0.1); then two to
        // 127.0.0.1, two to .2 and one to .3.
        for (address, count) in [("127.0.0.1", 3), ("127.0.0.2", 2), ("127.0.0.3", 1)] {
            #expect(opened.filter { $0.contains("client=\(address) ") }.count == count, "\(opened)")
        }
    }

    @Test func idleWithoutAServerPidIsRefused() async throws {
        let (status, log) = try await CanopyLoad.runExpectingFailure(["idle", "--server", "127.0.0.1:1"])
        #expect(status != 0)
        #expect(log.contains("--server-pid"), "\(log)")
    }
}

/// Runs the `canopy-load` executable built beside the tests.
enum CanopyLoad {
    enum Failure: Error, CustomStringConvertible {
        case notBuilt
        case timedOut(String)
        case notJSON(String)

        var description: String {
            switch self {
            case .notBuilt: "canopy-load is not built beside the tests; run `swift build --product canopy-load`"
            case .timedOut(let log): "canopy-load did not finish within 50 s; its output:\n\(log)"
            case .notJSON(let log): "canopy-load did not print one JSON object; its output:\n\(log)"
            }
        }
    }

    /// Runs `canopy-load` with `arguments`; returns its exit status, the JSON object it printed and
    /// everything it wrote (for failure messages).
    static func run(
        _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (Int32, [String: Any], String) {
        let (status, output, log) = try await launch(arguments, environment: environment)
        guard let object = try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
            throw Failure.notJSON(log)
        }
        return (status, object, log)
    }

    /// Runs `canopy-load` with `arguments` that it should refuse; returns its exit status and output.
    static func runExpectingFailure(_ arguments: [String]) async throws -> (Int32, String) {
        let (status, _, log) = try await launch(arguments)
        return (status, log)
    }

    /// Runs `canopy-load` until it exits, with `environment` added to this process's (less any
    /// `CANOPY_TOKEN`); returns its exit status, its standard output, and both of its outputs
    /// together.
    static func launch(
        _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (Int32, String, String) {
        guard let executable else { throw Failure.notBuilt }
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let outPath = folder + "/stdout"
        let errPath = folder + "/stderr"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        var merged = ProcessInfo.processInfo.environment
        merged["CANOPY_TOKEN"] = nil
        let process = try ChildProcess.launch(
            executable, arguments, environment: merged.merging(environment) { $1 }, standardOutput: .file(outPath),
            standardError: .file(errPath))
        let deadline = ContinuousClock.now + .seconds(50)
        while process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let log = output + ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
        guard !process.isRunning else {
            process.send(SIGKILL)
            await process.exit()
            throw Failure.timedOut(log)
        }
        return (process.status, output, log)
    }

    /// The `canopy-load` binary built with the tests.
    static let executable = BuiltExecutable.locate("canopy-load")
}

/// `canopy-load takeover` at a tiny size: it kills the owner, measures, and checks every write.
@Suite(
    .serialized,
    .enabled(
        if: PostgresTestCluster.isEnabled && serverExecutable != nil && CanopyLoad.executable != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binaries"))
struct TakeoverScenarioTests {
    @Test(.timeLimit(.minutes(3)))
    func takeoverKillsTheOwnerAndFindsEveryAcknowledgedWrite() async throws {
        try await withPostgresCluster { cluster in
            let port = try TestServer.reservePort()
            let (status, report, log) = try await CanopyLoad.run([
                "takeover", "--store", cluster.url, "--server-binary", try #require(serverExecutable), "--nodes", "2",
                "--kills", "2", "--port", "\(port)", "--json",
            ])
            #expect(status == 0, "\(log)")
            #expect((report["takeoverMilliseconds"] as? [Double])?.count == 2, "\(log)")
            #expect(report["lostAcknowledgedWrites"] as? Int == 0, "\(log)")
            #expect((report["acknowledgedWrites"] as? Int ?? 0) >= 40, "\(log)")
        }
    }
}

/// `canopy-load chaos` for a few seconds: random faults on the owner (kill, pause past the lease,
/// stop), each recovered from, and no acknowledged write lost.
@Suite(
    .enabled(
        if: PostgresTestCluster.isEnabled && serverExecutable != nil && CanopyLoad.executable != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binaries"))
struct ChaosScenarioTests {
    @Test(.timeLimit(.minutes(4)))
    func randomFaultsLoseNoAcknowledgedWrite() async throws {
        try await withPostgresCluster { cluster in
            let port = try TestServer.reservePort()
            let (status, report, log) = try await CanopyLoad.run([
                "chaos", "--store", cluster.url, "--server-binary", try #require(serverExecutable), "--nodes", "3",
                "--duration", "12", "--lease-duration", "1", "--seed", "7", "--port", "\(port)", "--json",
            ])
            #expect(status == 0, "\(log)")
            #expect(report["lostAcknowledgedWrites"] as? Int == 0, "\(log)")
            let recoveries = try #require(report["recoveryMilliseconds"] as? [String: [Double]], "\(log)")
            let faults = recoveries.values.reduce(0) { $0 + $1.count }
            #expect(faults >= 2, "\(log)")
            #expect((report["acknowledgedWrites"] as? Int ?? 0) >= 40, "\(log)")
            // The namespace's epoch, read from PostgreSQL once writes flowed and after each fault,
            // rose every time: another node took the namespace, and none went back.
            let epochs = try #require(report["epochs"] as? [Int], "\(log)")
            #expect(epochs.count == faults + 1, "\(log)")
            #expect(zip(epochs, epochs.dropFirst()).allSatisfy { $0 < $1 }, "\(epochs)")
            // Three SDK clients listened throughout: each saw every acknowledged write, and each of
            // their ended connections' onDisconnect operations ran exactly once.
            #expect(report["clientsMissingWrites"] as? [Int] == [0, 0, 0], "\(log)")
            let clients = try #require(report["clients"] as? [[String: Any]], "\(log)")
            #expect(clients.count == 3)
            #expect(clients.allSatisfy { ($0["problems"] as? [String])?.isEmpty == true }, "\(clients)")
            let ended = clients.reduce(0) { $0 + ($1["endedConnections"] as? Int ?? 0) }
            #expect(ended >= 1, "faults ended the clients' connections: \(clients)")
        }
    }
}

/// `canopy-load storm --nodes`: SDK clients spread over three nodes come back through them each time
/// the node serving their namespace is killed and another takes it over.
@Suite(
    .enabled(
        if: PostgresTestCluster.isEnabled && serverExecutable != nil && CanopyLoad.executable != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binaries"))
struct ClusterStormScenarioTests {
    @Test(.timeLimit(.minutes(3)))
    func sdkClientsComeBackWhenAnotherNodeTakesTheirNamespaceOver() async throws {
        try await withPostgresCluster { cluster in
            let port = try TestServer.reservePort()
            let (status, report, log) = try await CanopyLoad.run([
                "storm", "--sdk", "--launch", "--server-binary", try #require(serverExecutable), "--server",
                "127.0.0.1:\(port)", "--nodes", "3", "--server-store", cluster.url, "--lease-duration", "2",
                "--clients", "12", "--restart", "kill", "--rounds", "2", "--timeout", "60", "--json",
            ])
            #expect(status == 0, "\(log)")
            #expect(report["allBack"] as? Bool == true, "\(log)")
            let rounds = try #require(report["rounds"] as? [[String: Any]], "\(log)")
            #expect(rounds.map { $0["back"] as? Int } == [12, 12], "\(log)")
            // The data was seeded through the first node, which served the namespace until it was
            // killed; the node that took over was killed in the next round.
            let killed = rounds.map { $0["restartedPort"] as? Int }
            #expect(killed.first == port, "\(log)")
            #expect(killed.count == 2 && killed[0] != killed[1] && killed[1] != nil, "\(log)")
        }
    }
}

/// `canopy-load tree-load` at a tiny size, on the embedded store: it fills a namespace, restarts
/// the server and reads the first leaf back after each restart.
@Suite(.enabled(if: serverExecutable != nil && CanopyLoad.executable != nil, "needs the binaries"))
struct TreeLoadScenarioTests {
    @Test(.timeLimit(.minutes(2)))
    func treeLoadFillsANamespaceAndTimesEachReloadOnSQLite() async throws {
        let port = try TestServer.reservePort()
        let (status, report, log) = try await CanopyLoad.run([
            "tree-load", "--server-binary", try #require(serverExecutable), "--leaves", "12000", "--rounds", "2",
            "--port", "\(port)", "--json",
        ])
        #expect(status == 0, "\(log)")
        let stores = try #require(report["stores"] as? [[String: Any]], "\(log)")
        #expect(stores.map { $0["store"] as? String } == ["SQLite"], "\(log)")
        #expect((stores.first?["loadMilliseconds"] as? [Double])?.count == 2, "\(log)")
        #expect(report["leaves"] as? Int == 12000, "\(log)")
    }

    /// With --postgres the same runs on PostgreSQL too, and the namespace it made is deleted.
    @Test(
        .timeLimit(.minutes(3)),
        .enabled(if: PostgresTestCluster.isEnabled, "needs CANOPY_TEST_POSTGRES=1"))
    func treeLoadComparesPostgreSQLWithSQLite() async throws {
        try await withPostgresCluster { cluster in
            let port = try TestServer.reservePort()
            let (status, report, log) = try await CanopyLoad.run([
                "tree-load", "--server-binary", try #require(serverExecutable), "--leaves", "12000", "--rounds", "2",
                "--port", "\(port)", "--postgres", cluster.url, "--json",
            ])
            #expect(status == 0, "\(log)")
            let stores = try #require(report["stores"] as? [[String: Any]], "\(log)")
            #expect(stores.map { $0["store"] as? String } == ["SQLite", "PostgreSQL"], "\(log)")
            for store in stores {
                #expect((store["loadMilliseconds"] as? [Double])?.count == 2, "\(store)")
            }
            #expect(log.contains("PostgreSQL / SQLite (median load time)"), "\(log)")
            let left = try await cluster.psql("SELECT count(*) FROM canopy_nodes WHERE ns LIKE 'treeload%'")
            #expect(left == "0", "the namespace the run made was left in PostgreSQL")
        }
    }
}
