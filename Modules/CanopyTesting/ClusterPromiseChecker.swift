import Tree

/// Checks a cluster's promises to its clients after a fault, once the ``NumberedWriter`` stopped:
/// every acknowledged write is in PostgreSQL and every client's view is exactly what PostgreSQL
/// holds, the namespace's epoch never went back (and went up when the namespace moved), and each
/// client's onDisconnect counter is the number of registrations acknowledged on its connections
/// that ended (give or take those never answered): each dead connection's operations ran once.
///
/// Each promise found broken goes to `report` (a test records it as an issue, and the checks go on);
/// ``check(after:moved:since:)`` throws only when it cannot check at all.
///
/// ```swift
/// let checker = ClusterPromiseChecker(
///     store: cluster, namespace: "demo", writer: writer, clients: [raw], epochs: epochs, nodes: nodes
/// ) { Issue.record(Comment(rawValue: $0)) }
/// var checkpoint = try await checker.check(after: "the start", moved: false, since: nil)
/// ```
public struct ClusterPromiseChecker: Sendable {
    /// What a check leaves for the next one to compare with.
    public struct Checkpoint: Sendable {
        public var epoch: Int
        /// How many epoch samples were taken by then.
        public var epochSamples: Int
        /// Per client: connections that ended so far.
        public var ended: [String: Int]
    }

    public let store: PostgresTestCluster
    public let namespace: String
    public let writer: NumberedWriter
    public let clients: [any ObservedClient]
    public let epochs: EpochMonitor
    public let nodes: ClusterNodes
    private let report: @Sendable (String) -> Void

    /// A checker of `namespace`'s promises to `clients`, reporting each broken one to `report`.
    public init(
        store: PostgresTestCluster, namespace: String, writer: NumberedWriter, clients: [any ObservedClient],
        epochs: EpochMonitor, nodes: ClusterNodes, report: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.namespace = namespace
        self.writer = writer
        self.clients = clients
        self.epochs = epochs
        self.nodes = nodes
        self.report = report
    }

    private func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { report(message()) }
    }

    /// Waits (generously) for each client to be connected with its onDisconnect registered, for
    /// the counters to reach what the ended connections registered, and for every view to equal
    /// what PostgreSQL holds; then checks each promise. `moved`: the fault must have moved the
    /// namespace (a higher epoch, and every client's connection to the old owner ended).
    public func check(after fault: String, moved: Bool, since previous: Checkpoint?) async throws -> Checkpoint {
        let started = ContinuousClock.now
        // A quiet moment: anything the fault left in flight lands.
        try await Task.sleep(for: .milliseconds(500))

        // Every client is connected again, its registration for this connection acknowledged.
        let reconnected = await eventually(timeout: .seconds(90)) {
            clients.allSatisfy { $0.ledger.counts.isOpen && $0.ledger.counts.registeredOnCurrent > 0 }
        }
        expect(
            reconnected, "after \(fault): not every client is connected and registered: \(ledgers)\n\(nodes.logs())")
        let reconnectedAfter = ContinuousClock.now - started

        // onDisconnect: each ended connection's increment ran once.
        _ = await eventually(timeout: .seconds(60)) {
            for client in clients {
                let expected = client.ledger.counts.expectedRuns
                guard let stored = try? await counter(client.name), expected.contains(stored) else { return false }
            }
            return true
        }
        try await expectCounters(after: fault)
        let countedAfter = ContinuousClock.now - started

        // Every client converges on exactly what PostgreSQL holds.
        var stored = try await store.storedTree(of: namespace)
        let converged = await eventually(timeout: .seconds(90)) {
            guard let tree = try? await store.storedTree(of: namespace) else { return false }
            stored = tree
            return clients.allSatisfy { $0.view == tree }
        }
        let convergedAfter = ContinuousClock.now - started
        for client in clients {
            let view = client.view
            expect(
                view == stored,
                """
                after \(fault): \(client.name) does not see what PostgreSQL holds \
                (converged: \(converged)): \(Self.difference(view, stored))
                """)
        }

        // Every acknowledged write is in PostgreSQL, and every client sees it.
        let acknowledged = writer.acknowledged
        let lost = acknowledged.filter { stored.value(at: $0.key) != $0.value }.keys.sorted()
        expect(lost.isEmpty, "after \(fault): acknowledged but not in PostgreSQL: \(lost)")
        for client in clients {
            let view = client.view
            let unseen = acknowledged.filter { view.value(at: $0.key) != $0.value }.keys.sorted()
            expect(unseen.isEmpty, "after \(fault): \(client.name) does not see acknowledged writes \(unseen)")
        }

        // The epoch never goes back; a fault that moved the namespace raised it.
        guard let epoch = try await store.epoch(of: namespace) else {
            throw ClusterTestError.unexpected("after \(fault): namespace \"\(namespace)\" has no epoch")
        }
        let samples = epochs.samples
        let sampled = samples.dropFirst(max(0, (previous?.epochSamples ?? 0) - 1))
        let wentBack = zip(sampled, sampled.dropFirst()).filter { $0.1 < $0.0 }
        expect(wentBack.isEmpty, "during \(fault): the epoch went back: \(wentBack) (sampled \(Array(sampled)))")
        if let previous {
            expect(epoch >= previous.epoch, "after \(fault): the epoch went back from \(previous.epoch) to \(epoch)")
            if moved {
                expect(epoch > previous.epoch, "after \(fault): the epoch stayed \(epoch)")
            }
        }

        // The connections that ended in the fault: with the namespace moved, each client's
        // connection to the old owner.
        let ended = Dictionary(uniqueKeysWithValues: clients.map { ($0.name, $0.ledger.counts.ended) })
        if let previous, moved {
            for client in clients {
                expect(
                    ended[client.name, default: 0] > previous.ended[client.name, default: 0],
                    "after \(fault): \(client.name)'s connection to the old owner did not end")
            }
        }

        // Only the live connections' operations are left to run (one record each), and after the
        // wait for convergence no operation ran a second time.
        let records = try await store.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = '\(namespace)'")
        expect(
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
        let owner = try await store.owner(of: namespace)
        let epochs = "epoch \(previous.map { "\($0.epoch)" } ?? "-") -> \(epoch) (\(sampled.count) samples)"
        let writes = "\(acknowledged.count) writes acknowledged, \(stored["log"]?.objectValue?.count ?? 0) in log"
        print(
            "cluster promises: after \(fault): owner \(owner), \(epochs), connections ended "
                + "\(counters.joined(separator: ", ")); \(writes); connected after \(reconnectedAfter), counted after "
                + "\(countedAfter), converged after \(convergedAfter)")
        if convergedAfter > .seconds(10) {
            print("cluster promises: slow to settle after \(fault): \(ledgers)\n\(nodes.logs())")
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
            expect(
                counts.expectedRuns.contains(stored),
                """
                after \(fault): \(client.name)'s onDisconnect ran \(stored) times for \(counts.ended) ended \
                connections, \(counts.endedRegistered) of them registered (\(counts))
                """)
        }
    }

    /// The number at `disconnects/<name>` in PostgreSQL (0 when absent).
    private func counter(_ name: String) async throws -> Int {
        try await store.storedNumber(at: "disconnects/\(name)", in: namespace)
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
