import CanopyTesting
import Foundation
import Synchronization
import Testing
import Transport
import Tree

@testable import Canopy

/// One cluster of three real `canopy-server` processes over one private PostgreSQL (leases of 2 s)
/// goes through every fault in turn while clients stay connected: two SDK `Database`s configured
/// with different nodes, each listening to the whole namespace, a raw realtime client doing the
/// same, and a REST writer making numbered writes through whichever node answers.
///
/// The faults: the owner killed with SIGKILL (then started again), the owner stopped with SIGSTOP
/// past its lease while another node takes the namespace (then let go on with SIGCONT),
/// PostgreSQL restarted as after a crash (`pg_ctl restart -m immediate`: SIGQUIT), and, where
/// network namespaces can be made, the owner cut from PostgreSQL and from its clients. Each node
/// then runs in a network namespace of its own (all three, so that whichever owns the namespace
/// can be cut); elsewhere they run on the loopback and the partition is left out.
///
/// After each fault, with the writer stopped: every acknowledged write is in PostgreSQL and every
/// client's view is exactly what PostgreSQL holds (so each saw every acknowledged write), the
/// namespace's epoch never went back (and went up when the namespace moved), and each client's
/// onDisconnect counter is the number of registrations acknowledged on its connections that ended
/// (plus at most those sent on them and never answered, which the server may have stored): each
/// dead connection's operations ran exactly once.
///
/// Every client registers its increment once per connection, as an app does for presence: the
/// SDKs when `.info/connected` turns true (the SDK does not register operations again on a new
/// connection by itself: only a registration cut off before its answer is sent again, and acknowledged
/// there), the raw client right after each hello.
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(
    .serialized,
    .enabled(
        if: PostgresTestCluster.isEnabled && ServerProcess.locateExecutable() != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binary"))
struct ClusterFaultSequenceTests {
    static let namespace = "sequence"
    static let leaseSeconds = 2

    @Test(.timeLimit(.minutes(5)))
    func everyPromiseHoldsAfterEachFaultOfTheSequence() async throws {
        try await withPostgresCluster { store in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            var networks: [NetworkNamespace] = []
            do {
                if NetworkNamespace.isAvailable {
                    for _ in 0..<3 { networks.append(try await NetworkNamespace.create()) }
                    try await store.listen(on: networks.map(\.hostAddress))
                }
                let nodes = try await ClusterNodes.start(
                    store: store, leaseSeconds: Self.leaseSeconds, networks: networks, folder: folder)
                do {
                    try await Self.runSequence(store: store, nodes: nodes)
                } catch {
                    print("cluster fault sequence: failed (\(error)); the nodes' logs end with:\n\(nodes.logs())")
                    await nodes.stop()
                    throw error
                }
                await nodes.stop()
            } catch {
                for network in networks { await network.remove() }
                throw error
            }
            for network in networks { await network.remove() }
        }
    }

    private static func runSequence(store: PostgresTestCluster, nodes: ClusterNodes) async throws {
        let writer = NumberedWriter(
            rest: ClusterRESTClient(nodes: nodes.baseURLs, timeout: .seconds(3)), namespace: namespace)
        // The first writes go to node1, which takes the namespace.
        writer.start()
        do {
            try await waitUntil("the first writes") { writer.count >= 10 }
        } catch {
            await writer.stop()
            throw error
        }
        await writer.stop()
        #expect(try await store.owner(of: namespace) == "node1")

        // The SDKs are configured with node2 and node3; all three are sent on to the owner.
        let sdks = [
            SDKClient(name: "sdk2", url: nodes.databaseURL(of: 1, namespace: namespace)),
            SDKClient(name: "sdk3", url: nodes.databaseURL(of: 2, namespace: namespace)),
        ]
        let raw = ClusterRawClient(
            name: "raw", urls: (0..<3).map { nodes.webSocketURL(of: $0, namespace: namespace) },
            namespace: namespace)
        raw.start()
        let epochs = EpochMonitor(store: store, namespace: namespace)
        let checker = ClusterPromiseChecker(
            store: store, namespace: namespace, writer: writer, clients: sdks + [raw], epochs: epochs, nodes: nodes
        ) { Issue.record(Comment(rawValue: $0)) }
        do {
            try await runFaults(store: store, nodes: nodes, writer: writer, raw: raw, checker: checker)
        } catch {
            await writer.stop()
            await epochs.stop()
            await raw.stop()
            for sdk in sdks { sdk.database.shutDown() }
            throw error
        }
        await epochs.stop()
        await raw.stop()
        for sdk in sdks { sdk.database.shutDown() }
    }

    private static func runFaults(
        store: PostgresTestCluster, nodes: ClusterNodes, writer: NumberedWriter, raw: ClusterRawClient,
        checker: ClusterPromiseChecker
    ) async throws {
        var before = try await checker.check(after: "the start", moved: false, since: nil)

        // 1. The owner killed with SIGKILL under write load, then started again.
        var owner = try await store.owner(of: namespace)
        writer.start()
        try await waitUntil("writes before the kill") { writer.count >= writer.countAtStart + 20 }
        await nodes.kill(owner)
        let afterKill = writer.count
        try await waitUntil("writes after the kill") { writer.count >= afterKill + 20 }
        try await nodes.restart(owner)
        try await waitUntil("writes after the restart") { writer.count >= afterKill + 30 }
        await writer.stop()
        before = try await checker.check(after: "SIGKILL of the owner (\(owner))", moved: true, since: before)

        // 2. The owner stopped past its lease; another node takes the namespace meanwhile; it goes on.
        before = try await isolateOwner(
            store: store, nodes: nodes, writer: writer, raw: raw, checker: checker, since: before, key: "pause",
            fault: { "SIGSTOP of the owner (\($0)) past its lease" },
            isolate: { owner in
                await nodes.pause(owner)
                return { nodes.resume(owner) }
            },
            // A paused process does not renew; the others wait out its lease.
            waitBeforeTakeOver: .seconds(leaseSeconds + 1))

        // 3. PostgreSQL restarted as after a crash.
        owner = try await store.owner(of: namespace)
        writer.start()
        try await waitUntil("writes before the restart of PostgreSQL") {
            writer.count >= writer.countAtStart + 20
        }
        try await store.restart(immediate: true)
        let afterRestart = writer.count
        try await waitUntil("writes after the restart of PostgreSQL") { writer.count >= afterRestart + 20 }
        await writer.stop()
        before = try await checker.check(
            after: "pg_ctl restart -m immediate (owner \(owner) before)", moved: false, since: before)

        // 4. The owner cut from PostgreSQL and from its clients, until another node took over.
        if nodes.hasNetworks {
            before = try await isolateOwner(
                store: store, nodes: nodes, writer: writer, raw: raw, checker: checker, since: before, key: "cut",
                fault: { "the owner (\($0)) cut from PostgreSQL and its clients" },
                isolate: { owner in
                    try await nodes.cut(owner)
                    return { try await nodes.heal(owner) }
                },
                waitBeforeTakeOver: .zero)
        } else {
            print("cluster fault sequence: no network namespaces here; the partition was left out")
        }
    }

    /// One fault that isolates the namespace's owner (`isolate` returns how to undo it) while the
    /// writer runs: a write sent to the owner after it was isolated, another node taking the
    /// namespace, the owner back; the late write must never be acknowledged nor stored, and every
    /// promise holds after it.
    private static func isolateOwner(
        store: PostgresTestCluster, nodes: ClusterNodes, writer: NumberedWriter, raw: ClusterRawClient,
        checker: ClusterPromiseChecker, since before: ClusterPromiseChecker.Checkpoint, key: String,
        fault: (String) -> String, isolate: (String) async throws -> @Sendable () async throws -> Void,
        waitBeforeTakeOver: Duration
    ) async throws -> ClusterPromiseChecker.Checkpoint {
        let owner = try await store.owner(of: namespace)
        let fault = fault(owner)
        writer.start()
        try await waitUntil("writes before \(fault)") { writer.count >= writer.countAtStart + 20 }
        let restore = try await isolate(owner)
        let late = try await raw.sendLate("late/\(key)")
        let isolated = ContinuousClock.now
        try await Task.sleep(for: waitBeforeTakeOver)
        try await takeOver(nodes, from: owner, writing: key, writer: writer, what: "during \(fault)")
        print(
            "cluster fault sequence: another node took the namespace \(ContinuousClock.now - isolated) after \(fault)")
        try await restore()
        await expectNotAcknowledged(late, "the owner (\(owner)) once back", nodes, owner)
        let afterFault = writer.count
        try await waitUntil("writes after \(fault)") { writer.count >= afterFault + 10 }
        await writer.stop()
        let checkpoint = try await checker.check(after: fault, moved: true, since: before)
        let lateRows = try await store.psql(
            "SELECT count(*) FROM canopy_nodes WHERE ns = '\(namespace)' AND path = 'late/\(key)'")
        #expect(lateRows == "0", "\(fault): the late write was stored")
        return checkpoint
    }

    // MARK: Faults

    /// Writes `log/<key>` through the nodes other than `owner` until one acknowledges it: the
    /// namespace is taken from `owner` once its lease ran out.
    private static func takeOver(
        _ nodes: ClusterNodes, from owner: String, writing key: String, writer: NumberedWriter, what: String
    ) async throws {
        let others = nodes.baseURLs.enumerated().filter { nodes.name(of: $0.offset) != owner }.map(\.element)
        let deadline = ContinuousClock.now + .seconds(60)
        var attempt = 0
        while ContinuousClock.now < deadline {
            let base = others[attempt % others.count]
            attempt += 1
            let answer = try? await TestServer.http(
                baseURL: base, .PUT, "/log/\(key).json?ns=\(namespace)", body: "\"\(key)\"", timeout: .seconds(5))
            if answer?.status == 200 {
                writer.acknowledge("log/\(key)", .string(key))
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ClusterTestError.timedOut("a node taking the namespace from \(owner) \(what)")
    }

    /// The write sent into the fault must never be acknowledged: it got an error, or its
    /// connection ended unanswered.
    private static func expectNotAcknowledged(
        _ late: Task<RealtimeTestClient.Response, any Error>, _ who: String, _ nodes: ClusterNodes, _ owner: String
    ) async {
        switch await late.result {
        case .success(let answer):
            #expect(!answer.isOK, "\(who) acknowledged a write: \(answer)\n\(nodes.log(of: owner).suffix(4000))")
            print("cluster fault sequence: \(who) answered the write sent into the fault \(answer.status)")
        case .failure(let error):
            // Unanswered: not acknowledged either.
            print("cluster fault sequence: \(who) left the write sent into the fault unanswered: \(error)")
        }
    }
}

/// A Canopy SDK `Database` listening to the whole namespace, registering `disconnects/<name>`
/// += 1 as onDisconnect each time `.info/connected` turns true.
final class SDKClient: ObservedClient {
    let name: String
    let database: Database
    let ledger = ConnectionLedger()
    private let latest = Latest()

    init(name: String, url: String) {
        self.name = name
        let database = Database(url: url, connector: Database.realtimeConnector)
        self.database = database
        let (ledger, latest) = (ledger, latest)
        database.reference().observe(.value) { snapshot in latest.set(snapshot.node.json()) }
        database.reference(withPath: ".info/connected").observe(.value) { snapshot in
            guard snapshot.value as? Bool == true else {
                ledger.ended()
                return
            }
            ledger.opened()
            ledger.sent()
            database.reference(withPath: "disconnects").onDisconnectUpdateChildValues(
                [name: ServerValue.increment(1)]
            ) { error, _ in ledger.registered(error == nil) }
        }
    }

    var view: JSONValue { latest.value }

    /// The last value the listener had.
    private final class Latest: Sendable {
        private let state = Mutex(JSONValue.null)

        var value: JSONValue { state.withLock { $0 } }

        func set(_ value: JSONValue) { state.withLock { $0 = value } }
    }
}
