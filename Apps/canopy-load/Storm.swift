import ArgumentParser
import AsyncHTTPClient
import Dispatch
import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import ProcessResources
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reconnection storm: every client loses its connection at once and comes back.
struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time for N clients to come back after all their connections drop at once.",
        discussion: """
            --clients connections each listen to two locations: their own (`storm/users/c<i>`, \
            --payload bytes that never change) and one every client shares (`storm/shared`, a \
            number). Then, per round, either every socket is cut at once (--cut: the tool aborts \
            each connection with a TCP reset; the server keeps running), or the server is restarted \
            (--restart kill|term: SIGKILL or SIGTERM, then started again on the same port and data \
            folder; needs --launch). Right after the cut (after the restart: as soon as the server \
            accepts connections) the tool sets `storm/shared` to the round's number over REST. A \
            refused token, seed write or listen ends the run at once (exit status 77).

            A client is back when it is connected again, both its listens are answered on the new \
            connection and it holds the round's number at `storm/shared`. The tool reports the \
            percentiles over clients of the time from the cut to being back, the time of the last \
            one, how many clients were sent their own (unchanged) data again, and the server's CPU \
            time for the round divided by the clients (from /proc, when the tool started the server \
            or was given --server-pid).

            The clients are raw realtime connections replaying what the Canopy SDK does on \
            reconnect: the SDK's own ReconnectBackoff (1 s, ×1.3 per failure up to 30 s, jittered to \
            0.3·d + 0.7·d·random; reset at each cut as for apps connected for over 30 s), `ls=` with \
            the last session id, the stats request, then each listen with the hash of the data held \
            (Node.hash, as the SDK's sync tree computes it). They cost this process a fraction of what \
            SDK instances would, so the figures are the server's. With --sdk (and --restart) the \
            clients are real SDK Database instances instead, each with its own connection; they are \
            back when the write reaches them (the SDK does not show when a listen is answered).

            With --nodes N (and --launch, --server-store, --sdk, --restart) the tool starts N \
            canopy-server processes over that PostgreSQL database, on --server's port and the N - 1 \
            after it, and configures the clients with the nodes in turn: those given a node that does \
            not serve the namespace follow its redirect to the one that does. Each round stops \
            whichever node serves the namespace (found by its redirects), makes the round's write through \
            another node, which takes the namespace over, and then starts the stopped node again; the \
            clients come back through the node they were configured with. The server CPU is then the \
            nodes' together.
            """)

    enum RestartSignal: String, ExpressibleByArgument, CaseIterable {
        case kill
        case term

        var number: Int32 { self == .kill ? SIGKILL : SIGTERM }
    }

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Clients (connections), each with two listens.") var clients = 1000
    @Flag(help: "Cut every client's socket at once; the server keeps running.") var cut = false
    @Option(help: "Restart the server instead (needs --launch): kill (SIGKILL) or term (SIGTERM).")
    var restart: RestartSignal?
    @Flag(help: "Drive real Canopy SDK Database instances instead of raw connections (with --restart only).")
    var sdk = false
    @Option(help: "Bytes of each client's own data.") var payload = 200
    @Option(help: "Storms to run one after the other.") var rounds = 1
    @Option(help: "canopy-server processes over --server-store's database (see the discussion).") var nodes = 1
    @Option(help: "With --nodes, the nodes' --lease-duration, in seconds.") var leaseDuration: Double = 5
    @Option(help: "Seconds each round may take before the clients not back are reported missing.")
    var timeout: Double = 60
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard clients > 0, rounds > 0, payload >= 0, timeout > 0 else {
            throw ValidationError("--clients, --rounds and --timeout must be positive, --payload not negative")
        }
        guard cut != (restart != nil) else { throw ValidationError("give exactly one of --cut and --restart") }
        if restart != nil, !launchOptions.launch {
            throw ValidationError("--restart needs --launch: the tool restarts only a server it started")
        }
        if sdk, restart == nil {
            throw ValidationError(
                "--sdk works with --restart only: an SDK instance's socket cannot be cut from outside")
        }
        if sdk, options.tls || options.tlsCaFile != nil {
            throw ValidationError("--sdk does not connect over TLS; storm over TLS drives raw connections (drop --sdk)")
        }
        if restart != nil, launchOptions.inMemory {
            throw ValidationError("--restart needs the server's data on disk (drop --in-memory)")
        }
        if nodes > 1 {
            guard sdk, restart != nil, launchOptions.serverStore != nil, launchOptions.data == nil else {
                throw ValidationError(
                    "--nodes needs --sdk, --restart, --launch and --server-store (the nodes' shared PostgreSQL "
                        + "database), and no --data: raw clients do not follow redirects")
            }
        }
        guard nodes >= 1, leaseDuration > 0 else {
            throw ValidationError("--nodes and --lease-duration must be positive")
        }
        _ = try options.endpoint()
    }

    var mode: String { restart.map { "restart-\($0.rawValue)" } ?? "cut" }

    func run() async throws {
        let run = try ScenarioRun(json: json, connections: clients, what: "\(clients) clients")
        let endpoint = try options.endpoint()
        let report = try await run.withServers(
            launching: { try await startServers(at: endpoint, console: run.console) }, reachableAt: options,
            givenPid: launchOptions.serverPid
        ) { servers in
            try await measure(servers, machine: run.machine, console: run.console)
        }
        try run.console.emit(report)
        // A script can tell a storm some clients did not come back from by the exit status alone.
        if !report.allBack { throw ExitCode(2) }
    }

    /// The server the tool starts with --launch, or the nodes with --nodes (and the folder of their
    /// data folders); none without --launch.
    private func startServers(
        at endpoint: (host: String, port: Int), console: Console
    ) async throws -> LaunchedServers {
        guard nodes > 1, let store = launchOptions.serverStore else {
            return try await launchOptions.start(at: endpoint, console: console)
        }
        return try await ClusterNodes.start(
            count: nodes, binary: launchOptions.serverBinary, store: store, firstPort: endpoint.port,
            leaseSeconds: leaseDuration, prefix: "storm", console: console)
    }

    /// Seeds the data, connects every client and runs the rounds; the clients are stopped however
    /// it ends.
    private func measure(
        _ servers: ServersUnderLoad, machine: MachineInfo, console: Console
    ) async throws -> StormReport {
        let endpoint = try options.endpoint()
        let tally = StormTally()
        let callbacks = DispatchQueue(label: "canopy-load.sdk-callbacks")
        let clientList: [any StormParticipant] = (0..<clients).map { index in
            if sdk {
                let address = nodes > 1 ? "\(endpoint.host):\(endpoint.port + index % nodes)" : options.server
                let url = "http://\(address)?ns=\(options.namespace)&client=\(index)"
                return SDKStormClient(
                    index: index, url: url, authToken: options.authToken, tally: tally, queue: callbacks)
            }
            return StormClient(
                index: index, host: endpoint.host, port: endpoint.port, namespace: options.namespace,
                authToken: options.authToken, tally: tally)
        }
        let writer = RESTWriter(server: options.server, namespace: options.namespace, token: options.authToken)
        var tasks: [Task<Void, Never>] = []
        func stopAll() async {
            for client in clientList { client.stop() }
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            await writer.shutdown()
        }
        let report: StormReport
        do {
            console.line(
                "storm: \(clients) clients × 2 listens (own location, \(payload) bytes; one shared), \(mode), "
                    + "\(rounds) round(s), against \(options.server)")
            try await seed(writer)
            let connectStarted = monotonicNanoseconds()
            try await connect(clientList, tasks: &tasks, tally: tally, console: console)
            let connectSeconds = Double(monotonicNanoseconds() - connectStarted) / 1e9
            console.line(String(format: "all %d clients connected and listening in %.2f s", clients, connectSeconds))
            var results: [StormRound] = []
            for round in 1...rounds {
                try await Task.sleep(for: .seconds(1))
                let result = try await storm(
                    round: round, clients: clientList, tally: tally, servers: servers, writer: writer,
                    console: console)
                for line in result.describe() { console.line(line) }
                results.append(result)
                if !result.allBack { break }
            }
            report = StormReport(
                scenario: "storm", mode: mode, server: options.server, nodes: nodes, namespace: options.namespace,
                clients: clients,
                listensPerClient: 2, payloadBytes: payload, machine: machine,
                clientModel: sdk
                    ? "Canopy SDK Database instances in one process"
                    : "raw realtime connections replaying the Canopy SDK's reconnect",
                connectSeconds: connectSeconds, allBack: results.count == rounds && results.allSatisfy(\.allBack),
                rounds: results)
        } catch {
            await stopAll()
            throw error
        }
        await stopAll()
        return report
    }

    /// Writes every client's own data and the shared location (round 0), replacing `storm`.
    private func seed(_ writer: RESTWriter) async throws {
        var users: [String] = []
        users.reserveCapacity(clients)
        let filler = String(repeating: "x", count: payload)
        for index in 0..<clients { users.append(#""c\#(index)":{"name":"client \#(index)","data":"\#(filler)"}"#) }
        try await writer.put(
            StormLayout.root, json: #"{"shared":0,"users":{"# + users.joined(separator: ",") + "}}",
            until: monotonicNanoseconds() + UInt64(max(timeout, 60) * 1e9))
    }

    /// Starts every client's connection loop, at most 64 connecting at a time, and waits until each
    /// one's listens are answered.
    private func connect(
        _ clientList: [any StormParticipant], tasks: inout [Task<Void, Never>], tally: StormTally, console: Console
    ) async throws {
        tasks.reserveCapacity(clientList.count)
        let total = clientList.count
        let deadline = monotonicNanoseconds() + UInt64(max(timeout, Double(total) / 100) * 1e9)
        try await console.withProgress({
            "connecting: \(tally.ready.load(ordering: .relaxed)) of \(total) clients listening"
        }) {
            for client in clientList {
                while tasks.count - tally.ready.load(ordering: .relaxed) >= 64 {
                    try await Task.sleep(for: .milliseconds(1))
                    if monotonicNanoseconds() > deadline { break }
                }
                tasks.append(Task { await client.run() })
            }
            while tally.ready.load(ordering: .relaxed) < total {
                if let failure = tally.failure.withLock({ $0 }) { throw failure }
                let refused = tally.listenRefusals.byStatus
                if !refused.isEmpty {
                    throw LoadError.refused(
                        what: "listens", refusals: refused,
                        total: 2 * tally.ready.load(ordering: .relaxed) + tally.listenRefusals.total,
                        server: options.server)
                }
                guard monotonicNanoseconds() < deadline else {
                    throw LoadError.clientsNotReady(ready: tally.ready.load(ordering: .relaxed), total: total)
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// One storm: the cut or restart, the write after it, and the wait for every client.
    private func storm(
        round: Int, clients clientList: [any StormParticipant], tally: StormTally, servers underLoad: ServersUnderLoad,
        writer: RESTWriter, console: Console
    ) async throws -> StormRound {
        let servers = underLoad.launched
        let serverCPU = underLoad.cpuSeconds
        // The server to restart: the only one, or the node serving the namespace.
        let server = servers.count > 1 ? try await owner(among: servers, writer: writer) : servers.first
        // The round's write goes through a node still running; a redirect to the stopped one is retried.
        let writeServer = servers.count > 1 ? servers.first { $0 !== server }.map { "\($0.host):\($0.port)" } : nil
        tally.back.store(0, ordering: .relaxed)
        let attemptsBefore = tally.attempts.load(ordering: .relaxed)
        let failedBefore = tally.failedAttempts.load(ordering: .relaxed)
        let resentBefore = tally.ownDataResent.load(ordering: .relaxed)
        let listenQueue = ListenQueueCounters.read()
        let ownCPUBefore = ProcessCPU.ownSeconds()
        var cpuBefore = serverCPU()
        var downSeconds: Double?
        var startCPU: Double?

        let cutAt = monotonicNanoseconds()
        let total = clientList.count
        let deadline = cutAt + UInt64(timeout * 1e9)
        var writtenBeforeRestart: UInt64?
        for client in clientList { client.startRound(round, at: cutAt, cut: cut) }
        if let restart, let server {
            let othersBefore =
                servers.count > 1 ? servers.reduce(0) { $0 + ($1 === server ? 0 : $1.cpuSeconds ?? 0) } : 0
            await server.stop(restart.number)
            if servers.count > 1 {
                // Another node takes the namespace over with the round's write; the stopped one starts
                // again only then, so it cannot take the namespace back first.
                try await writer.put(StormLayout.shared, json: String(round), until: deadline, through: writeServer)
                writtenBeforeRestart = monotonicNanoseconds()
            }
            try await server.start()
            downSeconds = Double(monotonicNanoseconds() - cutAt) / 1e9
            // The new process's CPU so far is its start; what follows is the restore.
            startCPU = server.cpuSeconds
            cpuBefore = startCPU.map { $0 + othersBefore }
            if servers.count > 1 {
                console.line(
                    "round \(round): stopped the namespace's node (port \(server.port)); started it again once another took over"
                )
            }
        }
        // The write goes while clients come back: none can be back before it is applied.
        let write = Task {
            if let writtenBeforeRestart { return writtenBeforeRestart }
            try await writer.put(StormLayout.shared, json: String(round), until: deadline, through: writeServer)
            return monotonicNanoseconds()
        }
        await console.withProgress({
            String(
                format: "round %d: %.1f s, %d of %d back, %d connected", round,
                Double(monotonicNanoseconds() - cutAt) / 1e9, tally.back.load(ordering: .relaxed), total,
                tally.connected.load(ordering: .relaxed))
        }) {
            while tally.back.load(ordering: .relaxed) < total, monotonicNanoseconds() < deadline {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        let cpuAfter = serverCPU()
        if tally.back.load(ordering: .relaxed) < total { write.cancel() }
        let writtenAt = try? await write.value
        // Times up to an hour: a server that takes over a minute must still show in the figures.
        var backTimes = Histogram<UInt64>(
            highestTrackableValue: 3_600_000_000_000, numberOfSignificantValueDigits: .three)
        var restoreTimes = backTimes
        var back = 0
        var attemptsPerClient: [Int] = []
        attemptsPerClient.reserveCapacity(total)
        for client in clientList {
            attemptsPerClient.append(client.attemptsSinceCut)
            if let restored = client.restoredAfter { _ = restoreTimes.record(restored) }
            guard let after = client.backAfter else { continue }
            back += 1
            _ = backTimes.record(after)
        }
        let serverCPUSeconds = cpuAfter.flatMap { after in cpuBefore.map { after - $0 } }
        let queue = ListenQueueCounters.read()?.since(listenQueue)
        return StormRound(
            round: round, clients: total, back: back, allBack: back == total,
            backTime: back > 0 ? LatencyFigures(backTimes) : nil,
            lastBackSeconds: back > 0 ? Double(backTimes.max) / 1e9 : nil,
            restored: Int(restoreTimes.totalCount),
            restoreTime: restoreTimes.totalCount > 0 ? LatencyFigures(restoreTimes) : nil,
            serverDownSeconds: downSeconds, restartedPort: servers.count > 1 ? server?.port : nil,
            writeAfterCutSeconds: writtenAt.map { Double($0 - cutAt) / 1e9 },
            connectAttempts: tally.attempts.load(ordering: .relaxed) - attemptsBefore,
            failedAttempts: sdk ? nil : tally.failedAttempts.load(ordering: .relaxed) - failedBefore,
            mostAttemptsByOneClient: attemptsPerClient.max() ?? 0,
            ownDataResent: sdk ? nil : tally.ownDataResent.load(ordering: .relaxed) - resentBefore,
            refusedListens: tally.listenRefusals.total,
            serverStartCPUSeconds: startCPU, serverCPUSeconds: serverCPUSeconds,
            serverCPUMicrosecondsPerClient: serverCPUSeconds.map { $0 / Double(total) * 1e6 },
            loadGeneratorCPUSeconds: ProcessCPU.ownSeconds() - ownCPUBefore,
            listenQueueOverflows: queue?.overflows, listenQueueDrops: queue?.drops)
    }

    /// The node serving the namespace: the one that answers a read instead of redirecting it.
    private func owner(among servers: [LaunchedServer], writer: RESTWriter) async throws -> LaunchedServer {
        let port = try await writer.owner(amongPorts: servers.map(\.port))
        guard let owner = servers.first(where: { $0.port == port }) else {
            throw LoadError.check("the namespace's node is at port \(port), not one of the tool's nodes")
        }
        return owner
    }
}
