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
                let nodes = try await FaultNodes.start(store: store, networks: networks, folder: folder)
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

    private static func runSequence(store: PostgresTestCluster, nodes: FaultNodes) async throws {
        let writer = NumberedWriter(rest: ClusterRESTClient(nodes: nodes.baseURLs, timeout: .seconds(3)))
        // The first writes go to node1, which takes the namespace.
        writer.start()
        do {
            try await waitUntil("the first writes") { writer.count >= 10 }
        } catch {
            await writer.stop()
            throw error
        }
        await writer.stop()
        #expect(try await Self.owner(store) == "node1")

        // The SDKs are configured with node2 and node3; all three are sent on to the owner.
        let sdks = [
            SDKClient(name: "sdk2", url: nodes.databaseURL(of: 1, namespace: namespace)),
            SDKClient(name: "sdk3", url: nodes.databaseURL(of: 2, namespace: namespace)),
        ]
        let raw = RawClient(
            name: "raw", urls: (0..<3).map { nodes.webSocketURL(of: $0, namespace: namespace) },
            namespace: namespace)
        raw.start()
        let epochs = EpochMonitor(store: store, namespace: namespace)
        let checker = PromiseChecker(
            store: store, writer: writer, clients: sdks + [raw], epochs: epochs, nodes: nodes)
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
        store: PostgresTestCluster, nodes: FaultNodes, writer: NumberedWriter, raw: RawClient,
        checker: PromiseChecker
    ) async throws {
        var before = try await checker.check(after: "the start", moved: false, since: nil)

        // 1. The owner killed with SIGKILL under write load, then started again.
        var owner = try await Self.owner(store)
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
        owner = try await Self.owner(store)
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
        store: PostgresTestCluster, nodes: FaultNodes, writer: NumberedWriter, raw: RawClient,
        checker: PromiseChecker, since before: Checkpoint, key: String, fault: (String) -> String,
        isolate: (String) async throws -> @Sendable () async throws -> Void, waitBeforeTakeOver: Duration
    ) async throws -> Checkpoint {
        let owner = try await Self.owner(store)
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
        #expect(try await storedCount(store, path: "late/\(key)") == "0", "\(fault): the late write was stored")
        return checkpoint
    }

    // MARK: Faults

    /// Writes `log/<key>` through the nodes other than `owner` until one acknowledges it: the
    /// namespace is taken from `owner` once its lease ran out.
    private static func takeOver(
        _ nodes: FaultNodes, from owner: String, writing key: String, writer: NumberedWriter, what: String
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
        throw ClusterSequenceError.timedOut("a node taking the namespace from \(owner) \(what)")
    }

    /// The write sent into the fault must never be acknowledged: it got an error, or its
    /// connection ended unanswered.
    private static func expectNotAcknowledged(
        _ late: Task<RealtimeTestClient.Response, any Error>, _ who: String, _ nodes: FaultNodes, _ owner: String
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

    // MARK: PostgreSQL

    static func owner(_ store: PostgresTestCluster) async throws -> String {
        try await store.psql("SELECT node FROM canopy_owner WHERE ns = '\(namespace)'")
    }

    static func storedCount(_ store: PostgresTestCluster, path: String) async throws -> String {
        try await store.psql("SELECT count(*) FROM canopy_nodes WHERE ns = '\(namespace)' AND path = '\(path)'")
    }

    static func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), _ condition: () -> Bool
    ) async throws {
        guard await eventually(timeout: timeout, interval: .milliseconds(10), condition) else {
            throw ClusterSequenceError.timedOut(what)
        }
    }
}

enum ClusterSequenceError: Error, CustomStringConvertible {
    case timedOut(String)
    case unexpected(String)

    var description: String {
        switch self {
        case .timedOut(let what): "timed out waiting for \(what)"
        case .unexpected(let what): what
        }
    }
}

// MARK: - The promises

/// What a checkpoint leaves for the next one to compare with.
struct Checkpoint {
    var epoch: Int
    /// How many epoch samples were taken by then.
    var epochSamples: Int
    /// Per client: connections that ended so far.
    var ended: [String: Int]
}

/// Checks every promise after a fault, once the writer stopped.
struct PromiseChecker {
    let store: PostgresTestCluster
    let writer: NumberedWriter
    let clients: [any ObservedClient]
    let epochs: EpochMonitor
    let nodes: FaultNodes
    var namespace: String { ClusterFaultSequenceTests.namespace }

    /// Waits (generously) for each client to be connected with its onDisconnect registered, for
    /// the counters to reach what the ended connections registered, and for every view to equal
    /// what PostgreSQL holds; then checks each promise with `#expect`. `moved`: the fault must have
    /// moved the namespace (a higher epoch, and every client's connection to the old owner ended).
    func check(after fault: String, moved: Bool, since previous: Checkpoint?) async throws -> Checkpoint {
        let started = ContinuousClock.now
        // A quiet moment: anything the fault left in flight lands.
        try await Task.sleep(for: .milliseconds(500))

        // Every client is connected again, its registration for this connection acknowledged.
        let reconnected = await eventually(timeout: .seconds(90)) {
            clients.allSatisfy { $0.ledger.counts.isOpen && $0.ledger.counts.registeredOnCurrent > 0 }
        }
        #expect(
            reconnected, "after \(fault): not every client is connected and registered: \(ledgers)\n\(nodes.logs())")
        let reconnectedAfter = ContinuousClock.now - started

        // onDisconnect: each ended connection's increment ran once.
        _ = await eventually(timeout: .seconds(60)) {
            for client in clients {
                let counts = client.ledger.counts
                let range = counts.endedRegistered...(counts.endedRegistered + counts.endedUnanswered)
                guard let stored = try? await counter(client.name), range.contains(stored) else { return false }
            }
            return true
        }
        try await expectCounters(after: fault)
        let countedAfter = ContinuousClock.now - started

        // Every client converges on exactly what PostgreSQL holds.
        var stored = try await storedTree()
        let converged = await eventually(timeout: .seconds(90)) {
            guard let tree = try? await storedTree() else { return false }
            stored = tree
            return clients.allSatisfy { $0.view == tree }
        }
        let convergedAfter = ContinuousClock.now - started
        for client in clients {
            let view = client.view
            #expect(
                view == stored,
                """
                after \(fault): \(client.name) does not see what PostgreSQL holds \
                (converged: \(converged)): \(Self.difference(view, stored))
                """)
        }

        // Every acknowledged write is in PostgreSQL, and every client sees it.
        let acknowledged = writer.acknowledged
        let lost = acknowledged.filter { stored.value(at: $0.key) != $0.value }.keys.sorted()
        #expect(lost.isEmpty, "after \(fault): acknowledged but not in PostgreSQL: \(lost)")
        for client in clients {
            let view = client.view
            let unseen = acknowledged.filter { view.value(at: $0.key) != $0.value }.keys.sorted()
            #expect(unseen.isEmpty, "after \(fault): \(client.name) does not see acknowledged writes \(unseen)")
        }

        // The epoch never goes back; a fault that moved the namespace raised it.
        let epochText = try await store.psql("SELECT epoch FROM canopy_owner WHERE ns = '\(namespace)'")
        let epoch = try #require(Int(epochText), "after \(fault): epoch \"\(epochText)\"")
        let samples = epochs.samples
        let sampled = samples.dropFirst(max(0, (previous?.epochSamples ?? 0) - 1))
        let wentBack = zip(sampled, sampled.dropFirst()).filter { $0.1 < $0.0 }
        #expect(wentBack.isEmpty, "during \(fault): the epoch went back: \(wentBack) (sampled \(Array(sampled)))")
        if let previous {
            #expect(epoch >= previous.epoch, "after \(fault): the epoch went back from \(previous.epoch) to \(epoch)")
            if moved {
                #expect(epoch > previous.epoch, "after \(fault): the epoch stayed \(epoch)")
            }
        }

        // The connections that ended in the fault: with the namespace moved, each client's
        // connection to the old owner.
        let ended = Dictionary(uniqueKeysWithValues: clients.map { ($0.name, $0.ledger.counts.ended) })
        if let previous, moved {
            for client in clients {
                #expect(
                    ended[client.name, default: 0] > previous.ended[client.name, default: 0],
                    "after \(fault): \(client.name)'s connection to the old owner did not end")
            }
        }

        // Only the live connections' operations are left to run (one record each), and after the
        // wait for convergence no operation ran a second time.
        let records = try await store.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = '\(namespace)'")
        #expect(
            records == "\(clients.count)",
            "after \(fault): \(records) stored onDisconnect records for \(clients.count) live connections")
        try await expectCounters(after: fault)

        var counters: [String] = []
        for client in clients {
            let endedNow = ended[client.name, default: 0] - (previous?.ended[client.name, default: 0] ?? 0)
            let counts = client.ledger.counts
            counters.append(
                "\(client.name) \(endedNow) (ran \(try await counter(client.name)) of \(counts.opened) opened)")
        }
        let owner = try await store.psql("SELECT node FROM canopy_owner WHERE ns = '\(namespace)'")
        let epochs = "epoch \(previous.map { "\($0.epoch)" } ?? "-") -> \(epoch) (\(sampled.count) samples)"
        let writes = "\(acknowledged.count) writes acknowledged, \(stored["log"]?.objectValue?.count ?? 0) in log"
        print(
            "cluster fault sequence: after \(fault): owner \(owner), \(epochs), connections ended "
                + "\(counters.joined(separator: ", ")); \(writes); connected after \(reconnectedAfter), counted after "
                + "\(countedAfter), converged after \(convergedAfter)")
        if convergedAfter > .seconds(10) {
            print("cluster fault sequence: slow to settle after \(fault): \(ledgers)\n\(nodes.logs())")
        }
        return Checkpoint(epoch: epoch, epochSamples: samples.count, ended: ended)
    }

    private var ledgers: String {
        clients.map { "\($0.name) \($0.ledger.counts)" }.joined(separator: "; ")
    }

    /// Each client's counter in PostgreSQL is the number of its ended connections whose
    /// registration was acknowledged (give or take those whose registration was never answered:
    /// the client cannot know whether those were registered).
    private func expectCounters(after fault: String) async throws {
        for client in clients {
            let counts = client.ledger.counts
            let stored = try await counter(client.name)
            let range = counts.endedRegistered...(counts.endedRegistered + counts.endedUnanswered)
            #expect(
                range.contains(stored),
                """
                after \(fault): \(client.name)'s onDisconnect ran \(stored) times for \(counts.ended) ended \
                connections, \(counts.endedRegistered) of them registered (\(counts))
                """)
        }
    }

    /// The number at `disconnects/<name>` in PostgreSQL (0 when absent).
    private func counter(_ name: String) async throws -> Int {
        let text = try await store.psql(
            "SELECT value FROM canopy_nodes WHERE ns = '\(namespace)' AND path = 'disconnects/\(name)'")
        if text.isEmpty { return 0 }
        guard let value = Double(text) else { throw ClusterSequenceError.unexpected("not a number: \(text)") }
        return Int(value)
    }

    /// The namespace as PostgreSQL holds it, as a JSON tree.
    private func storedTree() async throws -> JSONValue {
        let rows = try await store.psql(
            "SELECT path || E'\\t' || value FROM canopy_nodes WHERE ns = '\(namespace)' ORDER BY path")
        var tree = JSONValue.null
        for row in rows.split(separator: "\n") {
            guard let tab = row.firstIndex(of: "\t") else { continue }
            let path = String(row[..<tab])
            tree = tree.setting(try JSONValue(parsing: String(row[row.index(after: tab)...])), at: path)
        }
        return tree
    }

    /// The keys of `log` and `disconnects` one tree has and the other lacks or holds differently.
    private static func difference(_ view: JSONValue, _ stored: JSONValue) -> String {
        var parts: [String] = []
        for top in Set((view.objectValue ?? [:]).keys).union((stored.objectValue ?? [:]).keys).sorted() {
            let mine = view[top]?.objectValue ?? [:]
            let theirs = stored[top]?.objectValue ?? [:]
            let missing = theirs.keys.filter { mine[$0] == nil }.sorted()
            let extra = mine.keys.filter { theirs[$0] == nil }.sorted()
            let different = mine.keys.filter { theirs[$0] != nil && theirs[$0] != mine[$0] }.sorted()
            if !missing.isEmpty { parts.append("\(top): missing \(missing)") }
            if !extra.isEmpty { parts.append("\(top): not in PostgreSQL \(extra)") }
            for key in different {
                parts.append("\(top)/\(key): \(mine[key]?.serialized() ?? "") != \(theirs[key]?.serialized() ?? "")")
            }
        }
        return parts.isEmpty ? "(same)" : parts.joined(separator: "; ")
    }

}

/// Samples the namespace's epoch in PostgreSQL every quarter second, from start to ``stop()``, so
/// that a step back during a fault shows (the checkpoints only compare one fault's end with the
/// next's). A sample PostgreSQL cannot answer (while it restarts) is skipped.
final class EpochMonitor: Sendable {
    private let taken = Mutex<[Int]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(store: PostgresTestCluster, namespace: String) {
        let sampler = Task { [self] in
            while !Task.isCancelled {
                let text = try? await store.psql("SELECT epoch FROM canopy_owner WHERE ns = '\(namespace)'")
                if let text, let epoch = Int(text) { self.taken.withLock { $0.append(epoch) } }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        task.withLock { $0 = sampler }
    }

    var samples: [Int] { taken.withLock { $0 } }

    func stop() async {
        let sampler = task.withLock { $0 }
        sampler?.cancel()
        await sampler?.value
    }
}

// MARK: - The cluster

/// Three `canopy-server` nodes, each on a port it keeps across restarts, each in a network
/// namespace of its own when `networks` are given (to cut one off), else on the loopback.
final class FaultNodes: Sendable {
    private struct Spec: Sendable {
        let name: String
        let port: Int
        let network: NetworkNamespace?
        var host: String { network?.address ?? "127.0.0.1" }
    }

    private let specs: [Spec]
    private let processes: Mutex<[String: ServerProcess]>
    private let store: PostgresTestCluster
    private let folder: String
    private let executable: String

    private init(specs: [Spec], store: PostgresTestCluster, folder: String, executable: String) {
        self.specs = specs
        self.store = store
        self.folder = folder
        self.executable = executable
        processes = Mutex([:])
    }

    static func start(
        store: PostgresTestCluster, networks: [NetworkNamespace], folder: String
    ) async throws -> FaultNodes {
        let executable = try #require(ServerProcess.locateExecutable())
        var specs: [Spec] = []
        for index in 0..<3 {
            specs.append(
                Spec(
                    name: "node\(index + 1)", port: try TestServer.reservePort(),
                    network: networks.isEmpty ? nil : networks[index]))
        }
        let nodes = FaultNodes(specs: specs, store: store, folder: folder, executable: executable)
        do {
            for spec in specs { try await nodes.restart(spec.name) }
        } catch {
            await nodes.stop()
            throw error
        }
        return nodes
    }

    var hasNetworks: Bool { specs.first?.network != nil }

    var baseURLs: [String] { specs.map { "http://\($0.host):\($0.port)" } }

    func name(of index: Int) -> String { specs[index].name }

    /// The SDK's URL of node `index`.
    func databaseURL(of index: Int, namespace: String) -> String {
        "http://\(specs[index].host):\(specs[index].port)?ns=\(namespace)"
    }

    func webSocketURL(of index: Int, namespace: String) -> String {
        "ws://\(specs[index].host):\(specs[index].port)/.ws?v=5&ns=\(namespace)"
    }

    func log(of name: String) -> String { process(name)?.log ?? "" }

    /// The end of every node's log, for a failure's message.
    func logs() -> String {
        specs.map { "\($0.name):\n\(log(of: $0.name).suffix(3000))" }.joined(separator: "\n")
    }

    private func process(_ name: String) -> ServerProcess? { processes.withLock { $0[name] } }

    private func spec(_ name: String) throws -> Spec {
        guard let spec = specs.first(where: { $0.name == name }) else {
            throw ClusterSequenceError.unexpected("no node named \"\(name)\"")
        }
        return spec
    }

    /// Starts node `name` (again), on its port, over the same data folder.
    func restart(_ name: String) async throws {
        let spec = try spec(name)
        var arguments = [
            "--node-name", spec.name, "--port", "\(spec.port)",
            "--lease-duration", "\(ClusterFaultSequenceTests.leaseSeconds)",
            "--advertise-host", "\(spec.host):\(spec.port)",
        ]
        let process: ServerProcess
        if let network = spec.network {
            // Not on a loopback address: writes create namespaces only when told to.
            arguments += [
                "--store", store.url(host: network.hostAddress), "--host", network.address, "--create-namespaces",
            ]
            process = try await ServerProcess.start(
                executable: executable, dataDirectory: folder + "/" + name, arguments: arguments,
                launcher: network.launcher, host: network.address)
        } else {
            arguments += ["--store", store.url]
            process = try await ServerProcess.start(
                executable: executable, dataDirectory: folder + "/" + name, arguments: arguments)
        }
        processes.withLock { $0[name] = process }
    }

    func kill(_ name: String) async { await process(name)?.kill() }

    func pause(_ name: String) async { await process(name)?.pause() }

    func resume(_ name: String) { process(name)?.resume() }

    func cut(_ name: String) async throws { try await spec(name).network?.cut() }

    func heal(_ name: String) async throws { try await spec(name).network?.heal() }

    /// Stops every node (a paused one is let go on first).
    func stop() async {
        for process in processes.withLock({ Array($0.values) }) {
            process.resume()
            await process.terminate()
        }
    }
}

/// Numbered REST writes (`log/w<n>` = n) through the cluster, one after another, while started.
final class NumberedWriter: Sendable {
    private struct State {
        var next = 0
        var countAtStart = 0
        var acknowledged: [String: JSONValue] = [:]
        var numbered = 0
        var task: Task<Void, Never>?
    }

    private let rest: ClusterRESTClient
    private let state = Mutex(State())

    init(rest: ClusterRESTClient) { self.rest = rest }

    /// Numbered writes acknowledged so far.
    var count: Int { state.withLock { $0.numbered } }

    /// ``count`` when the writer last started.
    var countAtStart: Int { state.withLock { $0.countAtStart } }

    /// Every acknowledged write: path to value.
    var acknowledged: [String: JSONValue] { state.withLock { $0.acknowledged } }

    /// Records a write acknowledged by other means.
    func acknowledge(_ path: String, _ value: JSONValue) {
        state.withLock { $0.acknowledged[path] = value }
    }

    func start() {
        let task = Task { [self] in
            while !Task.isCancelled {
                let index = state.withLock { state in
                    defer { state.next += 1 }
                    return state.next
                }
                let path = "log/w\(index)"
                guard
                    let done = try? await rest.put(
                        "/\(path).json?ns=\(ClusterFaultSequenceTests.namespace)", body: "\(index)")
                else { continue }
                if done {
                    state.withLock { state in
                        state.acknowledged[path] = .number(Double(index))
                        state.numbered += 1
                    }
                }
            }
        }
        state.withLock { state in
            state.countAtStart = state.numbered
            state.task = task
        }
    }

    /// Stops writing and waits for the write in flight to end (its outcome then unknown unless
    /// acknowledged).
    func stop() async {
        let task = state.withLock { state in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }
}

// MARK: - Clients

/// What one client saw of its connections, for counting the onDisconnect operations that must
/// have run: one per ended connection whose registration was acknowledged.
final class ConnectionLedger: Sendable {
    struct Counts: Sendable, CustomStringConvertible {
        var opened = 0
        var ended = 0
        var isOpen = false
        /// Registrations acknowledged on the open connection.
        var registeredOnCurrent = 0
        /// Registrations acknowledged on connections that ended.
        var endedRegistered = 0
        /// Ended connections whose registration got no answer (it may or may not have been stored).
        var endedUnanswered = 0
        var refused = 0
        /// Registrations sent (see ``ConnectionLedger/sent()``) and not answered yet. The SDK sends
        /// one cut off by its connection's end again on the next connection, so it stays
        /// outstanding until that answer.
        var outstanding = 0

        var description: String {
            "opened \(opened), ended \(ended), open \(isOpen), registered now \(registeredOnCurrent), "
                + "ended registered \(endedRegistered), ended unanswered \(endedUnanswered), refused \(refused), "
                + "outstanding \(outstanding)"
        }
    }

    private let state = Mutex(Counts())

    var counts: Counts { state.withLock { $0 } }

    func opened() {
        state.withLock { counts in
            if counts.isOpen { Self.end(&counts, unanswered: false) }
            counts.opened += 1
            counts.isOpen = true
            counts.registeredOnCurrent = 0
        }
    }

    /// A registration was sent on the open connection.
    func sent() {
        state.withLock { $0.outstanding += 1 }
    }

    func registered(_ accepted: Bool) {
        state.withLock { counts in
            counts.outstanding = max(0, counts.outstanding - 1)
            if accepted { counts.registeredOnCurrent += 1 } else { counts.refused += 1 }
        }
    }

    func ended(unanswered: Bool = false) {
        state.withLock { counts in
            guard counts.isOpen else { return }
            Self.end(&counts, unanswered: unanswered)
        }
    }

    /// Ends the open connection: each registration it acknowledged must run once; each one that
    /// was sent on it without an answer (`unanswered`, or still outstanding) may have been stored
    /// and run.
    private static func end(_ counts: inout Counts, unanswered: Bool) {
        counts.isOpen = false
        counts.ended += 1
        counts.endedRegistered += counts.registeredOnCurrent
        counts.endedUnanswered += max(unanswered ? 1 : 0, counts.outstanding)
        counts.registeredOnCurrent = 0
    }
}

/// A client the checker watches: its view of the whole namespace and its connections.
protocol ObservedClient: Sendable {
    /// Its key under `disconnects`.
    var name: String { get }
    var view: JSONValue { get }
    var ledger: ConnectionLedger { get }
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

/// A raw realtime-protocol client: connects to the nodes in turn, follows the redirect `r`,
/// registers `disconnects/<name>` += 1 as onDisconnect right after each hello, listens to the
/// whole namespace and connects again whenever its connection ends.
final class RawClient: ObservedClient {
    private struct State {
        var view = JSONValue.null
        var connection: RealtimeTestClient?
        var task: Task<Void, Never>?
    }

    let name: String
    let ledger = ConnectionLedger()
    private let urls: [String]
    private let namespace: String
    private let state = Mutex(State())

    init(name: String, urls: [String], namespace: String) {
        self.name = name
        self.urls = urls
        self.namespace = namespace
    }

    var view: JSONValue { state.withLock { $0.view } }

    func start() {
        let task = Task { await run() }
        state.withLock { $0.task = task }
    }

    func stop() async {
        let (task, connection) = state.withLock { ($0.task, $0.connection) }
        task?.cancel()
        await connection?.close()
        await task?.value
    }

    /// Sends a write on the current connection without waiting; the task gets its answer.
    func sendLate(_ path: String) async throws -> Task<RealtimeTestClient.Response, any Error> {
        guard let connection = state.withLock({ $0.connection }) else { throw RealtimeTestError.notConnected }
        let number = try await connection.send(.put(path: path, data: 1, hash: nil))
        return Task { try await connection.response(to: number, timeout: .seconds(90)) }
    }

    private func run() async {
        var index = 0
        var target = urls[0]
        while !Task.isCancelled {
            let connection: RealtimeTestClient
            do {
                connection = try await RealtimeTestClient.connect(url: target, timeout: .seconds(10))
            } catch {
                if case RealtimeTestError.noHello(.reset(let host)?, _, _, _) = error {
                    target = "ws://\(host)/.ws?v=5&ns=\(namespace)"
                } else {
                    index = (index + 1) % urls.count
                    target = urls[index]
                }
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            await serve(connection)
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func serve(_ connection: RealtimeTestClient) async {
        state.withLock { $0.connection = connection }
        ledger.opened()
        var answered = false
        do {
            let answer = try await connection.request(
                .onDisconnectMerge(path: "disconnects", data: [name: [".sv": ["increment": 1]]]),
                timeout: .seconds(60))
            answered = true
            ledger.registered(answer.isOK)
            try await connection.send(.listen(path: "", query: nil, tag: nil, hash: nil))
            while !Task.isCancelled {
                if let push = await connection.pushIfAny(within: .seconds(1)) {
                    apply(push)
                } else if connection.isClosed {
                    break
                }
            }
        } catch {
            // The connection ended (or the registration got no answer in time).
        }
        if !Task.isCancelled { ledger.ended(unanswered: !answered) }
        state.withLock { $0.connection = nil }
        await connection.close()
    }

    private func apply(_ push: ServerMessage) {
        state.withLock { state in
            switch push {
            case .overwrite(let path, let data, _):
                state.view = state.view.setting(data, at: path)
            case .merge(let path, .object(let members), _):
                for (key, value) in members {
                    state.view = state.view.setting(value, at: path.isEmpty ? key : path + "/" + key)
                }
            default:
                break
            }
        }
    }
}

extension JSONValue {
    /// This tree with `value` at `path` (slash-separated), without nulls and empty objects.
    fileprivate func setting(_ value: JSONValue, at path: String) -> JSONValue {
        setting(value, at: path.split(separator: "/").map(String.init)[...])
    }

    private func setting(_ value: JSONValue, at keys: ArraySlice<String>) -> JSONValue {
        guard let key = keys.first else { return value.pruned }
        var members = objectValue ?? [:]
        let child = (members[key] ?? .null).setting(value, at: keys.dropFirst())
        members[key] = child == .null ? nil : child
        return members.isEmpty ? .null : .object(members)
    }

    private var pruned: JSONValue {
        guard case .object(let members) = self else { return self }
        let kept = members.compactMapValues { member -> JSONValue? in
            let pruned = member.pruned
            return pruned == .null ? nil : pruned
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// The value at `path` (slash-separated), `.null` when there is none.
    fileprivate func value(at path: String) -> JSONValue {
        var node = self
        for key in path.split(separator: "/") { node = node[String(key)] ?? .null }
        return node
    }
}
