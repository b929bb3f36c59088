import Foundation
import Logging
import NIOPosix
import Persistence
import Prometheus
import Query
import Rules
import ServerStorage
import Transport
import Tree

/// One database (namespace): the tree in memory, its durable store, and its listeners.
///
/// Every write is validated, applied to the in-memory tree at once (so later reads and
/// compare-and-sets see it), handed to the ``CommitQueue`` and acknowledged — together with the
/// updates it causes for listeners, which go out first — once its batch is durable. Reads and
/// fan-out never touch the disk.
///
/// The writes of one ``perform(_:)`` call (what one connection sent together) go to the commit
/// queue as one submission, so they are stored together or refused together.
///
/// Every write is validated completely before it touches the tree (the same checks the store
/// makes), so a refused write changes nothing and the store never refuses what memory applied.
///
/// If the store fails to commit a write (an I/O error, a full disk), that write and every write
/// queued after it are answered with `storage_error` (the ``CommitQueue`` halts, so the disk holds a
/// prefix of what memory applied), and the tree in memory is brought back to what is durable:
/// further writes are refused until everything queued before the failure has failed, then the tree
/// is reloaded from the store, the queue resumes, and listeners get the data that changed back.
actor Database {
    let name: String
    private(set) var root: Node
    private let commits: CommitQueue
    /// Writes the store may fall behind before new writes are refused (`unavailable`).
    private let maxUncommittedWrites: Int
    /// How long the indexes queries build on this namespace's tree are kept (bound around every
    /// query and update of ``root``).
    let indexRetention: IndexRetention
    /// Set while a connection's onDisconnect writes are applied: they are taken however far behind
    /// the store is (a connection's are bounded by `--max-on-disconnect-bytes`), since refusing
    /// them would lose them; they run once, and their stored record goes with them.
    private var admitsPastBacklog = false
    private let store: any ServerStore
    var listeners = ListenerTree()
    let metrics: ServerMetrics
    let logger: Logger
    let pushIDs = PushIDGenerator()
    /// The rules in force, compiled, and the text they were set from.
    private(set) var rules: RulesDocument
    private(set) var rulesText: String
    /// Whether rules were ever set: until then everything is allowed and nothing is evaluated.
    private(set) var enforcesRules: Bool
    /// The last requests the rules refused (`GET /.settings/rules/refusals.json`).
    var refusals = RefusalLog()
    /// Set from a storage failure until the tree in memory was reloaded from the store; writes are
    /// refused meanwhile.
    private var recovering = false
    /// Another server took this namespace over (see ``stepDown()``): nothing is written any more.
    private(set) var steppedDown = false
    /// The writes of the ``perform(_:)`` turn under way, committed as one submission at its end.
    private var turn: Turn?
    /// The onDisconnect operations a store shared by several processes held for connections no
    /// process serves any more, read at open; ``runStoredDisconnects()`` runs them.
    private var storedDisconnects: [StoredDisconnect]
    /// Whether connections' onDisconnect operations are stored before they are acknowledged.
    nonisolated let keepsDisconnectRecords: Bool
    /// How the writes clients named with a ``WriteID`` ended; also updated from commit callbacks.
    /// Read from the store at open, and stored with the writes of each turn that ran named ones.
    let appliedWrites = AppliedWrites()
    /// Fires when the store lost the namespace to another process (PostgreSQL only).
    private let lost: StepDownSignal?

    /// The rules of a namespace that never had rules set: everything readable and writable.
    static let openRulesText = """
        {
          "rules": {
            ".read": true,
            ".write": true
          }
        }
        """

    /// Opens the database; `rules`, when given (`canopy-server --rules`), replaces the stored rules.
    init(
        name: String, store: any ServerStore, commits: CommitQueue, metrics: ServerMetrics, logger: Logger,
        rules override: StartupRules? = nil, maxUncommittedWrites: Int = .max, stepDown: StepDownSignal? = nil,
        indexRetention: IndexRetention = IndexRetention()
    ) throws(StoreError) {
        self.indexRetention = indexRetention
        self.name = name
        self.lost = stepDown
        self.maxUncommittedWrites = maxUncommittedWrites
        self.store = store
        self.commits = commits
        self.metrics = metrics
        self.logger = logger
        self.root = try store.loadTree()
        appliedWrites.restore(try store.storedWriteIDs())
        keepsDisconnectRecords = store.keepsDisconnectOperations
        storedDisconnects = keepsDisconnectRecords ? try store.storedDisconnects() : []
        if let override {
            (rules, rulesText, enforcesRules) = (override.document, override.text, true)
            // Not written when already stored: a namespace nobody wrote to has no file to write it to.
            if try store.setting("rules") != .string(override.text) {
                try store.setSetting("rules", .string(override.text))
            }
            return
        }
        let stored: String? =
            switch try store.setting("rules") {
            case .string(let text)?: text
            // Stored before rules were enforced, as parsed JSON.
            case let document? where document != .null: document.serialized(pretty: true)
            default: nil
            }
        guard let stored else {
            (rules, rulesText, enforcesRules) = (.allowAll, Self.openRulesText, false)
            return
        }
        rulesText = stored
        enforcesRules = true
        do {
            rules = try RulesDocument(parsing: stored)
        } catch {
            // Refusing everyone is safe; opening everything to everyone is not.
            rules = .denyAll
            logger.error(
                "the stored rules do not parse; every request but the admin's is refused until rules are set",
                metadata: ["namespace": "\(name)", "error": "\(error)"])
        }
    }

    /// Milliseconds since 1970 on the server's clock.
    nonisolated static func now() -> Double {
        (Date().timeIntervalSince1970 * 1000).rounded()
    }

    var listenerCount: Int { listeners.count }

    // MARK: Writes

    /// Runs `writes` in order, in one turn of the database, and hands what they store to the
    /// commit queue as one submission: committed together (or refused together, if the store
    /// fails), then answered in order.
    ///
    /// `disconnects` (changes to stored onDisconnect operations) commit in the same transaction, and
    /// so does what ``appliedWrites`` now holds of the clients whose named writes ran in the turn.
    func perform(_ writes: [DatabaseWrite], disconnects: [DisconnectChange] = []) {
        turn = Turn(expecting: writes.count)
        for write in writes { write(self) }
        endTurn(disconnects: disconnects)
    }

    /// Runs `body` in the turn under way, or in a turn of its own when there is none.
    func withinTurn(_ body: () -> Void) {
        guard turn == nil else { return body() }
        turn = Turn(expecting: 1)
        body()
        endTurn(disconnects: [])
    }

    /// Notes that a write `client` named ran in this turn: what is remembered of the client's
    /// writes commits with the turn's writes. Call it within a turn (see ``withinTurn(_:)``).
    func ranNamedWrite(of client: String) {
        turn?.namedWriteClients.insert(client)
    }

    /// Hands the writes of the turn under way to the commit queue as one submission.
    private func endTurn(disconnects: [DisconnectChange]) {
        guard let finished = turn else { return }
        turn = nil
        // A turn whose writes were all refused at once leaves the write ids to the client's next
        // turn that stores something (each holds all the client's recent writes).
        guard !finished.acknowledgements.isEmpty || !disconnects.isEmpty else { return }
        let writeIDs = appliedWrites.changes(for: finished.namedWriteClients, seen: Int64(Self.now()))
        commits.submit(
            finished.writes, disconnects: disconnects, writeIDs: writeIDs,
            onDurable: completion(of: finished.acknowledgements, stores: !finished.writes.isEmpty))
    }

    /// What runs once a submission committed or failed: the pushes of each acknowledgement go out
    /// (when it committed) before its `done` runs, in order; a failed commit that stored something
    /// may start recovery.
    private func completion(
        of acknowledgements: [Acknowledgement], stores: Bool
    ) -> @Sendable (Result<Void, StoreError>) -> Void {
        let started = ContinuousClock.now
        let (metrics, logger, name, lost) = (metrics, logger, name, lost)
        return { result in
            if stores { metrics.commitLatency.record(ContinuousClock.now - started) }
            var events = 0
            for acknowledgement in acknowledgements {
                if case .success = result {
                    for (subscriber, push) in acknowledgement.deliveries { subscriber.deliver(push) }
                    events += acknowledgement.deliveries.count
                }
                switch (acknowledgement.answer, result) {
                case (.done(let done), _): done(result)
                case (.write(let outcome, let reply), .success): reply(outcome)
                case (.write(_, let reply), .failure(let error)):
                    reply(.rejected(Self.commitFailure(error, namespace: name, lost: lost?.hasFired == true)))
                }
            }
            metrics.eventsFannedOut.increment(by: Int64(events))
            if events > 0 { metrics.fanOutLatency.record(ContinuousClock.now - started) }
            if stores, case .failure(let error) = result, Self.startsRecovery(error) {
                logger.error("commit failed", metadata: ["error": "\(error)"])
                Task { await self.storageFailed() }
            }
        }
    }

    /// What the writes of one ``perform(_:)`` turn store, and how each is answered once durable.
    private struct Turn {
        var writes: [StoredWrite] = []
        var acknowledgements: [Acknowledgement] = []
        /// The clients whose named writes ran (see ``ranNamedWrite(of:)``).
        var namedWriteClients: Set<String> = []

        /// A turn of `count` writes: most store one location and are answered once, so the arrays
        /// are made that size at once instead of growing (and copying) as the writes arrive. A
        /// turn of one write takes that write's array as it is.
        init(expecting count: Int) {
            guard count > 1 else { return }
            writes.reserveCapacity(count)
            acknowledgements.reserveCapacity(count)
        }
    }

    private struct Acknowledgement {
        /// Pushes to deliver once durable.
        var deliveries: [(any Subscriber, Push)]
        var answer: Answer
    }

    /// What runs once a submission committed or failed, after its pushes went out.
    private enum Answer {
        /// A write's answer: `outcome` once durable, the commit's failure otherwise. Kept as data,
        /// where a closure holding both would be one more allocation per write.
        case write(WriteOutcome, reply: @Sendable (WriteOutcome) -> Void)
        case done(@Sendable (Result<Void, StoreError>) -> Void)
    }

    /// Delivers `push` to `subscriber` in commit order, then runs `done`: after the updates of every
    /// write applied before this call and before those of every write applied after it, whether or
    /// not those commit. A snapshot taken now reflects exactly the writes before it, so a subscriber
    /// never sees data go back in time. (Not for the steps of a ``perform(_:)`` turn, which are
    /// writes.)
    func deliverInCommitOrder(
        _ push: Push?, to subscriber: any Subscriber, then done: @escaping @Sendable () -> Void
    ) {
        inCommitOrder {
            if let push { subscriber.deliver(push) }
            done()
        }
    }

    /// Runs `body` once every write applied before this call has committed or failed (and was
    /// answered), before anything applied after it is answered.
    func inCommitOrder(_ body: @escaping @Sendable () -> Void) {
        submit([]) { _ in body() }
    }

    /// Answers a refused write in commit order, so the refusal does not overtake what was answered
    /// or pushed for the requests before it (a listen's first data, an earlier write's `ok`).
    private func refuse(
        _ error: WriteError, reply: @escaping @Sendable (WriteOutcome) -> Void
    ) -> AppliedWrites.Disposition {
        inCommitOrder { reply(.rejected(error)) }
        return .refused(error)
    }

    /// Answers a write refused because the store is behind at once: in commit order the refusal
    /// would itself queue behind the stalled store, and a client could grow that queue without end.
    private func refuseNow(
        _ error: WriteError, reply: @escaping @Sendable (WriteOutcome) -> Void
    ) -> AppliedWrites.Disposition {
        guard error.status == .unavailable else { return refuse(error, reply: reply) }
        reply(.rejected(error))
        return .refused(error)
    }

    /// Queues `writes` for commit: into the current turn's submission, or as a submission of their
    /// own outside a turn. `done` runs once they are durable or failed.
    private func submit(_ writes: [StoredWrite], done: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        submit(writes, deliveries: [], answer: .done(done))
    }

    /// Queues `writes` for commit as ``submit(_:done:)`` does; `answer` runs once they are durable
    /// (after `deliveries` went out) or failed.
    private func submit(_ writes: [StoredWrite], deliveries: [(any Subscriber, Push)], answer: Answer) {
        let acknowledgement = Acknowledgement(deliveries: deliveries, answer: answer)
        guard turn != nil else {
            commits.submit(writes, onDurable: completion(of: [acknowledgement], stores: !writes.isEmpty))
            return
        }
        // The first writes of a turn, when more than it expected (an update's thousands), are taken
        // as they are, not copied.
        if let reserved = turn?.writes.capacity, turn?.writes.isEmpty == true, writes.count > reserved {
            turn?.writes = writes
        } else {
            turn?.writes.append(contentsOf: writes)
        }
        turn?.acknowledgements.append(acknowledgement)
    }

    /// ``submit(_:deliveries:answer:)`` of one write: within a turn, it joins the turn's writes
    /// without an array of its own.
    private func submit(_ write: StoredWrite, deliveries: [(any Subscriber, Push)], answer: Answer) {
        guard turn != nil else { return submit([write], deliveries: deliveries, answer: answer) }
        turn?.writes.append(write)
        turn?.acknowledgements.append(Acknowledgement(deliveries: deliveries, answer: answer))
    }

    /// `set(path, json)`; with `expectedHash`, a compare-and-set against the current hash
    /// (`""` for absent data). `reply` runs once the write is durable and its updates were pushed.
    /// Returns at once how the write ended: applied (its commit under way), refused, or stale.
    @discardableResult
    func set(
        _ path: Path, json: JSONValue, expectedHash: String? = nil, as caller: Caller,
        reply: @escaping @Sendable (WriteOutcome) -> Void
    ) -> AppliedWrites.Disposition {
        let context = ServerValueContext(now: Self.now())
        let node: Node
        do {
            node = try newNode(json, at: path, context: context)
        } catch {
            return refuse(.refused(error), reply: reply)
        }
        if let refusal = refuseWhileRecovering() {
            return refuseNow(refusal, reply: reply)
        }
        guard maySet(path, to: node, caller: caller, at: context) else {
            return refuse(.permissionDenied, reply: reply)
        }
        if let expectedHash, root.child(at: path).hash != expectedHash {
            let current = root.child(at: path)
            submit([]) { _ in reply(.datastale(current: current)) }
            return .stale
        }
        apply(write: StoredWrite(path: path, node: node), answering: .ok(value: node), reply)
        return .applied
    }

    /// A multi-path update: each member of `json` is a path relative to `path`. Returns at once how
    /// it ended, as ``set(_:json:expectedHash:as:reply:)`` does.
    ///
    /// With `prepared` (``prepareUpdate(_:json:)`` of the same `path` and `json`), the nodes were
    /// built before the call, off the actor.
    @discardableResult
    func update(
        _ path: Path, json: JSONValue, prepared: PreparedUpdate? = nil, as caller: Caller,
        reply: @escaping @Sendable (WriteOutcome) -> Void
    ) -> AppliedWrites.Disposition {
        if let prepared { return update(path, prepared: prepared, as: caller, reply: reply) }
        guard case .object(let members) = json else {
            return refuse(.invalidData("an update must be an object of paths and values"), reply: reply)
        }
        let context = ServerValueContext(now: Self.now())
        let children = Result { () throws(TreeError) in try newChildren(members, at: path, context: context) }
        return update(path, prepared: PreparedUpdate(context: context, children: children), as: caller, reply: reply)
    }

    /// A multi-path update whose members were built into nodes (``prepareUpdate(_:json:)``,
    /// ``prepareUpdate(_:body:)``), or the reason they could not be.
    @discardableResult
    func update(
        _ path: Path, prepared: PreparedUpdate, as caller: Caller, reply: @escaping @Sendable (WriteOutcome) -> Void
    ) -> AppliedWrites.Disposition {
        let context = prepared.context
        let children: [(path: Path, node: Node)]
        switch prepared.children {
        case .success(let built): children = built
        case .failure(let error): return refuse(.refused(error), reply: reply)
        }
        if let refusal = refuseWhileRecovering() {
            return refuseNow(refusal, reply: reply)
        }
        guard mayUpdate(path, children: children, caller: caller, at: context) else {
            return refuse(.permissionDenied, reply: reply)
        }
        if children.isEmpty {
            submit([]) { [root] _ in reply(.ok(value: root.child(at: path))) }
            return .applied
        }
        let writes = children.map { StoredWrite(path: path.child($0.path), node: $0.node) }
        // Handed over, not shared: each learns from the tree in place.
        apply(writes: consume writes, merge: children, at: path, answering: .ok(value: .empty), reply)
        return .applied
    }

    /// The members of a multi-path update as ``update(_:json:prepared:as:reply:)`` builds them, built
    /// by the caller before it reaches the actor; `nil` when that needs the data (a member holds a
    /// server value, resolved against the current value) or `json` is not an object. An import
    /// sends updates of thousands of members: built beside the actor, the next one is ready while
    /// the actor applies the one before.
    nonisolated static func prepareUpdate(_ path: Path, json: JSONValue) -> PreparedUpdate? {
        guard case .object(let members) = json, !json.containsServerValue else { return nil }
        let context = ServerValueContext(now: now())
        let children = Result { () throws(TreeError) in
            try updateChildren(members, at: path) { absolute, value throws(TreeError) in
                try Node(json: value, at: absolute, serverValues: context, packing: true)
            }
        }
        return PreparedUpdate(context: context, children: children)
    }

    /// The members of the multi-path update `body` holds (its JSON text) as nodes, when they can
    /// all be built without parsing the whole body into a ``JSONValue`` first: records already
    /// written as the server writes them (an export read back) are taken as they stand
    /// (``Node/init(canonicalPackedJSON:depth:)``), other members parsed one by one. `nil` when the
    /// body is not valid JSON, not an object, holds a server value or a name twice, or a member is
    /// refused: ``prepareUpdate(_:json:)`` of the parsed body then builds it, and says what is wrong.
    nonisolated static func prepareUpdate(_ path: Path, body: UnsafeBufferPointer<UInt8>) -> PreparedUpdate? {
        guard let object = JSONObjectMembers(body) else { return nil }
        let context = ServerValueContext(now: now())
        let members = object.members.lazy.map { (key: $0.name, value: $0.value) }
        let children = try? updateChildren(members, at: path) { absolute, range throws(TreeError) in
            let bytes = UnsafeBufferPointer(rebasing: body[range])
            let isPriority = absolute.back?.isPriorityKey == true
            if !isPriority, let node = Node(canonicalPackedJSON: bytes, depth: absolute.count) { return node }
            let json = try JSONObjectMembers.parseValue(bytes)
            // Resolved against the data, on the actor: the parsed body is built there instead.
            guard !json.containsServerValue else {
                throw .invalidData(path: absolute.wireString, reason: "holds a server value")
            }
            return try Node(json: json, at: absolute, serverValues: context, packing: true)
        }
        return children.map { PreparedUpdate(context: context, children: .success($0)) }
    }

    /// The node a set of `json` at `path` writes, server values resolved at `context.now`; small
    /// objects are packed (see ``Node/packedText``), and the store keeps each as one row.
    func newNode(_ json: JSONValue, at path: Path, context: ServerValueContext) throws(TreeError) -> Node {
        let existing = json.containsServerValue ? root.child(at: path) : .empty
        return try Node(json: json, at: path, existing: existing, serverValues: context, packing: true)
    }

    /// The members of a multi-path update of `members` at `path` as nodes, as
    /// ``updateChildren(_:at:build:)`` gives them, server values resolved at `context.now`.
    func newChildren(
        _ members: [String: JSONValue], at path: Path, context: ServerValueContext
    ) throws(TreeError) -> [(path: Path, node: Node)] {
        try Self.updateChildren(members, at: path) { absolute, value throws(TreeError) in
            let existing = value.containsServerValue ? root.child(at: absolute) : .empty
            return try Node(json: value, at: absolute, existing: existing, serverValues: context, packing: true)
        }
    }

    /// Applies validated writes in memory, computes the pushes they cause, and queues them for
    /// commit; `reply` gets `outcome` once durable (after the pushes went out), or the error.
    private func apply(
        writes: consuming [StoredWrite], merge: [(path: Path, node: Node)]?, at path: Path,
        answering outcome: WriteOutcome, _ reply: @escaping @Sendable (WriteOutcome) -> Void
    ) {
        // Only listeners below the write compare old data with new. Without them nothing else holds
        // the tree, so the update changes it in place instead of copying the nodes on the way.
        let old = listeners.hasListeners(below: path) ? root : nil
        let deliveries = IndexRetention.$current.withValue(indexRetention) {
            if old == nil, let replaced = Self.setChildrenInPlace(of: &root, at: path, writes) {
                for index in writes.indices { writes[index].learn(replacing: replaced[index]) }
                return fanOut(at: path, old: root, new: root, merge: merge)
            }
            for index in writes.indices { change(&writes[index], inPlace: old == nil) }
            return fanOut(at: path, old: old ?? root, new: root, merge: merge)
        }
        metrics.writes.increment(by: Int64(writes.count))
        submit(writes, deliveries: deliveries, answer: .write(outcome, reply: reply))
        recheckDataDependentListens()
    }

    /// ``apply(writes:merge:at:answering:_:)`` of a set: one write at its own path.
    private func apply(
        write: consuming StoredWrite, answering outcome: WriteOutcome,
        _ reply: @escaping @Sendable (WriteOutcome) -> Void
    ) {
        let path = write.path
        let old = listeners.hasListeners(below: path) ? root : nil
        let deliveries = IndexRetention.$current.withValue(indexRetention) {
            change(&write, inPlace: old == nil)
            return fanOut(at: path, old: old ?? root, new: root, merge: nil)
        }
        metrics.writes.increment()
        submit(write, deliveries: deliveries, answer: .write(outcome, reply: reply))
        recheckDataDependentListens()
    }

    /// Applies `write` to the tree, in place when `inPlace` (nothing else holds the tree) and the
    /// tree allows it, and has it learn what the store holds where it writes.
    private func change(_ write: inout StoredWrite, inPlace: Bool) {
        // The tree holds what the store will hold when this write commits (the writes queued before
        // it commit first, and a failed commit halts the ones after it).
        if inPlace, let replaced = Self.setInPlace(of: &root, write) {
            write.learn(replacing: replaced)
            return
        }
        write.learn(from: root)
        root.update(at: write.path, to: write.node)
    }

    /// Applies `writes`, when each sets a child of `path` (as an import's updates of a wide node
    /// do), in one walk of the child map each (``Node/setChildrenInPlace(at:_:)``); returns what
    /// each replaced, or `nil`, having changed nothing, when that cannot be done.
    private static func setChildrenInPlace(of root: inout Node, at path: Path, _ writes: [StoredWrite]) -> [Node]? {
        guard writes.count > 1 else { return nil }
        var children: [(key: ChildKey, node: Node)] = []
        children.reserveCapacity(writes.count)
        for write in writes {
            guard write.path.count == path.count + 1, let key = write.path.back, !key.isPriorityKey else { return nil }
            children.append((key, write.node))
        }
        return root.setChildrenInPlace(at: path, children)
    }

    /// Applies `write`, when it sets a child of a node that exists (an overwrite, or a new child),
    /// in one walk down its path, where the writer's look at what is stored and the change took
    /// two; returns what it replaced, or `nil`, having changed nothing, when that cannot be done
    /// (see ``Node/setChildInPlace(at:key:to:)``; deletions and priorities take the two walks).
    private static func setInPlace(of root: inout Node, _ write: StoredWrite) -> Node? {
        guard let key = write.path.back, let parent = write.path.parent else { return nil }
        return root.setChildInPlace(at: parent, key: key, to: write.node)
    }

    /// The members of a multi-path update at `path` as nodes by relative path, in path order, each
    /// built by `build` from its absolute location and value. Throws for a member whose path is
    /// invalid or not writable once joined with `path` (`a/.priority` with `x`, `a` with `.info/x`),
    /// whose value `build` refuses, or that overlaps another member (`a` and `a/b`, `a` and `/a`).
    ///
    /// Sorted once, and checked for overlaps on the sorted list in one pass: an import writes wide
    /// nodes as updates of thousands of members, and this runs once per member.
    static func updateChildren<Members: Collection<(key: String, value: Value)>, Value>(
        _ members: Members, at path: Path,
        build: (_ absolute: Path, _ value: Value) throws(TreeError) -> Node
    ) throws(TreeError) -> [(path: Path, node: Node)] {
        var built: [(path: Path, node: Node)] = []
        built.reserveCapacity(members.count)
        for (key, value) in members {
            let relative = try Path(validating: key)
            let absolute = path.child(relative)
            try absolute.checkWritable()
            built.append((relative, try build(absolute, value)))
        }
        // Sorting positions moves integers, where sorting the pairs would copy (retain and release)
        // a path and a node at every step; members that are children of `path` (an import's wide
        // node) compare by key alone.
        var order = Array(built.indices)
        let keys = built.compactMap { $0.path.count == 1 ? $0.path.front : nil }
        if keys.count == built.count {
            // Already in order and distinct (an export read back): taken as they stand.
            if zip(keys, keys.dropFirst()).allSatisfy({ ChildKey.compare($0, $1) < 0 }) { return built }
            order.sort { ChildKey.compare(keys[$0], keys[$1]) < 0 }
            // Children of one node overlap only when one is named twice.
            for (previous, next) in zip(order, order.dropFirst())
            where ChildKey.compare(keys[previous], keys[next]) == 0 {
                throw .overlappingUpdate(built[previous].path.wireString, built[next].path.wireString)
            }
            return order.map { built[$0] }
        }
        order.sort { built[$0].path < built[$1].path }
        let children = order.map { built[$0] }
        try UpdateValidation.checkNoOverlap(sorted: children.lazy.map(\.path))
        return children
    }

    /// What the writer of a write whose commit failed with `error` is told. A write known not to be
    /// stored because the namespace is now another process's is ``WriteError/moved(_:)``, which a
    /// REST request takes to the new owner: fenced by a higher epoch, or held back after an earlier
    /// commit failed and the store gave the namespace up (`lost`).
    nonisolated static func commitFailure(_ error: StoreError, namespace: String, lost: Bool) -> WriteError {
        switch error {
        case .fenced: .moved(namespace)
        case .haltedAfterFailure where lost: .moved(namespace)
        default: WriteError(status: .storageError, message: "the write could not be stored: \(error.clientMessage)")
        }
    }

    /// Why a write cannot be taken now: the database recovers from a storage failure, or its store
    /// has fallen ``maxUncommittedWrites`` writes behind (a stalled disk), which would otherwise
    /// grow memory without bound.
    private func refuseWhileRecovering() -> WriteError? {
        if steppedDown {
            return .moved(name)
        }
        if recovering {
            return WriteError(
                status: .storageError, message: "the database is recovering from a storage failure; retry shortly")
        }
        let behind = commits.uncommittedWrites
        guard behind >= maxUncommittedWrites, !admitsPastBacklog else { return nil }
        metrics.tripped(.uncommittedWrites)
        return WriteError(
            status: .unavailable,
            message: "the database is \(behind) writes behind its storage; retry shortly")
    }

    /// Whether a commit failure starts a recovery: a submission refused only because an earlier one
    /// failed (``StoreError/haltedAfterFailure(reason:)``) belongs to the recovery that one started,
    /// and one refused because the namespace is closing (``StoreError/queueFinished``) has nothing
    /// to recover (its store is being closed).
    private nonisolated static func startsRecovery(_ error: StoreError) -> Bool {
        switch error {
        case .haltedAfterFailure, .queueFinished: false
        default: true
        }
    }

    /// Starts bringing memory back to what is durable, once what was queued before has committed.
    private func storageFailed() {
        guard !recovering, !steppedDown else { return }
        recovering = true
        commits.submit([]) { _ in Task { await self.reloadFromStore() } }
    }

    /// Stops serving: the store lost the namespace to another server (or could not renew its lease
    /// there). Writes are refused from now on, and every listening connection and event stream is
    /// ended so that its client reconnects, to the new owner.
    func stepDown() {
        guard !steppedDown else { return }
        steppedDown = true
        var ended = Set<Int>()
        for listener in listeners.all() where ended.insert(listener.subscriber.subscriberID).inserted {
            listener.subscriber.end()
        }
    }

    /// Replaces the tree with the stored one and pushes what changed back to listeners. The tree is
    /// read on NIO's blocking thread pool; writes stay refused meanwhile (`recovering`).
    private func reloadFromStore() async {
        let store = store
        do {
            let stored = try await NIOThreadPool.singleton.runIfActive { try store.loadTree() }
            let old = root
            root = stored
            for (subscriber, push) in fanOut(at: .root, old: old, new: stored, merge: nil) { subscriber.deliver(push) }
            recheckDataDependentListens()
            logger.warning("reloaded the tree from the store after a storage failure")
            // Memory matches the disk again: later writes may be computed from it and committed.
            commits.resume()
            recovering = false
        } catch {
            // Still failing: stay read-only and try again shortly.
            logger.error("reloading after a storage failure failed", metadata: ["error": "\(error)"])
            Task {
                try? await Task.sleep(for: .seconds(1))
                await self.reloadFromStore()
            }
        }
    }

    /// Commits `changes` to the stored onDisconnect operations after every write applied before;
    /// `done` runs once they are durable or failed.
    func submitDisconnectChanges(
        _ changes: [DisconnectChange], done: @escaping @Sendable (Result<Void, StoreError>) -> Void
    ) {
        commits.submit([], disconnects: changes, onDurable: done)
    }

    /// The operations read at open (see ``runStoredDisconnects()``), handed over once.
    func takeStoredDisconnects() -> [StoredDisconnect] {
        defer { storedDisconnects = [] }
        return storedDisconnects
    }

    /// Runs `writes` as ``perform(_:disconnects:)`` does, taking them however far behind the store
    /// is (a connection's onDisconnect writes: see ``run(_:session:)``).
    func performPastBacklog(_ writes: [DatabaseWrite], disconnects: [DisconnectChange]) {
        admitsPastBacklog = true
        perform(writes, disconnects: disconnects)
        admitsPastBacklog = false
    }

    // MARK: Rules

    /// Replaces the rules by `document` (parsed from `text`) once stored; if the store refuses it,
    /// the rules in force stay as they were and this throws what the store threw. Listeners the new
    /// rules no longer allow are revoked.
    ///
    /// The rules are stored through the commit queue, on its thread and in order with the writes, not
    /// on this actor; they take effect once stored.
    func setRules(_ document: RulesDocument, text: String) async throws(StoreError) {
        let stored: Result<Void, StoreError> = await withCheckedContinuation { continuation in
            commits.submitSetting("rules", .string(text)) { continuation.resume(returning: $0) }
        }
        try stored.get()
        (rules, rulesText, enforcesRules) = (document, text, true)
        revokeListeners(of: nil)
    }

    /// Whether `error`, from storing something for this namespace, means the namespace is now
    /// another process's (fenced by a higher epoch, or held back once the lease was lost), so the
    /// request belongs to the new owner.
    func isMoved(by error: StoreError) -> Bool {
        Self.commitFailure(error, namespace: name, lost: lost?.hasFired == true) == .moved(name)
    }

    /// The `.indexOn` entries of the rules at `path`.
    func indexedChildren(at path: Path) -> [String] {
        rules.indexOn(at: path)
    }
}
