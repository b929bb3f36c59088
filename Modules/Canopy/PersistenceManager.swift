import ClientCache
import Dispatch
import Foundation
import Logging
import Query
import SyncEngine
import Synchronization
import Tree

/// Keeps what the client syncs on the device when persistence is on: the server's data for the
/// queries it tracks, which of them the server confirmed (complete), and the writes not yet
/// acknowledged, in a ``ClientStore``.
///
/// Store calls run in order on one serial queue, off the caller's thread; reading the cache for a
/// new listener does not wait for them (other reads do). A storage failure is logged once, the store is dropped and the client
/// carries on in memory.
final class PersistenceManager: Sendable {
    private struct State {
        var store: (any ClientStore)?
        /// The next tracked query's id, once one was made in this run (read from the store then).
        var nextTrackedID: Int?
        var serverUpdatesSinceCheck = 0
        /// What the cache and the pending writes grew by since the last size check.
        var bytesSinceCheck = 0
    }

    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "canopy.persistence")
    private let logger: Logger
    let cachePolicy: LRUCachePolicy

    init(store: any ClientStore, cachePolicy: LRUCachePolicy, logger: Logger) {
        self.logger = logger
        self.cachePolicy = cachePolicy
        state = Mutex(State(store: store))
        // Tracked queries stay in the store, looked up through its indexes as they are needed: a
        // start-up reads none of them. First on the queue: nothing listens yet in this run.
        enqueue("marking tracked queries inactive") { try $0.deactivateTrackedQueries() }
        // A file an earlier run (or version) left over the size is brought under it now.
        enqueue("checking the cache size") { [self] store in try checkSize(store) }
    }

    /// The store's folder-level default: the application-support folder on Apple platforms,
    /// `$XDG_DATA_HOME` or `~/.local/share` elsewhere, with a `canopy` folder inside.
    static var defaultDirectory: URL {
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
        #else
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share")
        #endif
        return base.appendingPathComponent("canopy", isDirectory: true)
    }

    // MARK: Store access

    /// Runs `body` with the store, if there still is one, in order after what was queued before;
    /// then checks the size if the store grew by enough since the last check.
    private func enqueue(_ operation: String, _ body: @escaping @Sendable (any ClientStore) throws -> Void) {
        queue.async { [self] in
            guard let store = state.withLock({ $0.store }) else { return }
            let before = store.size.total
            do {
                try body(store)
            } catch {
                return failed(operation, error)
            }
            do { try grew(store, since: before) } catch { failed("checking the cache size", error) }
        }
    }

    /// Runs `body` with the store now, beside the queue: it sees what the store committed so far
    /// and does not wait for what is queued (such as writes syncing to disk).
    private func readNow<T: Sendable>(_ operation: String, _ body: (any ClientStore) throws -> T) -> T? {
        guard let store = state.withLock({ $0.store }) else { return nil }
        do {
            return try body(store)
        } catch {
            failed(operation, error)
            return nil
        }
    }

    /// Runs `body` with the store and returns its result, once what was queued before is done.
    private func read<T: Sendable>(_ operation: String, _ body: (any ClientStore) throws -> T) -> T? {
        queue.sync {
            guard let store = state.withLock({ $0.store }) else { return nil }
            do {
                return try body(store)
            } catch {
                failed(operation, error)
                return nil
            }
        }
    }

    private func failed(_ operation: String, _ error: any Error) {
        let wasOpen = state.withLock { state in
            defer { state.store = nil }
            return state.store != nil
        }
        if wasOpen {
            logger.error("persistence failed \(operation); continuing in memory only: \(error)")
        }
    }

    /// Drops the store (and its file lock) once everything queued was written.
    func close() {
        queue.sync {
            let store = state.withLock { state in
                defer { state.store = nil }
                return state.store
            }
            // A read beside the queue may still hold the store: close it now all the same, so that
            // the next `Database` (an app's next run) finds the file free.
            store?.close()
        }
    }

    /// What the store holds, once everything queued so far is stored; `nil` without a store.
    var size: ClientStoreSize? { read("reading the size") { $0.size } }

    /// Waits until everything queued so far is stored.
    func flush() { queue.sync {} }

    /// The store, while there is one (tests reach it to make it fail).
    var store: (any ClientStore)? { queue.sync { state.withLock { $0.store } } }

    // MARK: Settings

    func setting(_ name: String) -> String? { read("reading \(name)") { try $0.setting(name) } ?? nil }

    func setSetting(_ name: String, _ value: String?) {
        enqueue("storing \(name)") { try $0.setSetting(name, value) }
    }

    // MARK: Server cache

    /// What the device holds for `query`: complete when the server confirmed this query (or a
    /// complete query above it) before; otherwise the children other complete queries hold.
    func serverCache(for query: QuerySpec) -> (node: Node, complete: Bool) {
        // The tracked queries that matter here: at and above the query's location, and just below.
        guard
            let tracked = readNow(
                "reading the tracked queries at /\(query.path.wireString)",
                { store in
                    var nearby: [String: TrackedQuery] = [:]
                    for found in try store.trackedQueries(atOrAbove: query.path)
                        + store.trackedQueries(childrenOf: query.path)
                    {
                        nearby[Self.key(path: found.path, identifier: found.queryIdentifier)] = found
                    }
                    return nearby
                })
        else { return (.empty, false) }
        let (complete, keysQueryID, knownChildren): (Bool, Int?, (ids: [Int], children: Set<String>)?) = {
            let entry = tracked[Self.key(query)]
            if Self.isComplete(query, in: tracked) {
                let filtered = !query.params.loadsAllData && entry?.isComplete == true
                return (true, filtered ? entry?.id : nil, nil)
            }
            return (false, nil, Self.knownCompleteChildren(at: query.path, in: tracked))
        }()
        // Not queued: a listener added while writes sync to disk does not wait for them (the cache
        // updates still queued are for data the server sends again when the listen starts).
        let result = readNow("reading the cache at /\(query.path.wireString)") { store -> Node in
            let node = try store.serverCache(at: query.path)
            var keys: Set<String>?
            if let keysQueryID { keys = try store.trackedKeys(queryID: keysQueryID) }
            if let knownChildren {
                var union = knownChildren.children
                for id in knownChildren.ids { union.formUnion(try store.trackedKeys(queryID: id)) }
                keys = union
            }
            guard let keys else { return node }
            var filtered = Node.empty
            for key in keys { filtered = filtered.updatingChild(ChildKey(key), to: node.child(ChildKey(key))) }
            return filtered
        }
        return (result ?? .empty, complete && result != nil)
    }

    /// An untagged push: the server's data at `path` is `node`.
    func serverOverwrite(_ node: Node, at path: Path) {
        enqueue("caching data") { try $0.overwriteServerCache(node, at: path) }
        serverUpdated()
    }

    /// An untagged merge push.
    func serverMerge(_ children: [Path: Node], at path: Path) {
        enqueue("caching data") { try $0.mergeServerCache(children, at: path) }
        serverUpdated()
    }

    /// A push for the filtered `query`: merged into the cache (the query holds only some children),
    /// and the children it holds recorded.
    func serverUpdate(for query: QuerySpec, _ children: [Path: Node], at path: Path, replacesWindow: Bool) {
        enqueue("caching a query's data") { store in
            guard let id = try Self.tracked(query, in: store)?.id else { return }
            try store.mergeServerCache(children, at: path)
            var keys = replacesWindow ? [] : try store.trackedKeys(queryID: id)
            for (relative, node) in children {
                let full = Path.relative(from: query.path, to: path.child(relative))
                guard let key = full.front else { continue }
                if full.count == 1, node.isEmpty { keys.remove(key.string) } else { keys.insert(key.string) }
            }
            try store.setTrackedKeys(keys, queryID: id)
        }
        serverUpdated()
    }

    // MARK: Eviction

    /// Counts a server update; every ``LRUCachePolicy/serverUpdatesBetweenChecks`` of them, the
    /// cache is checked against its size.
    private func serverUpdated() {
        let due = state.withLock { state in
            state.serverUpdatesSinceCheck += 1
            guard state.serverUpdatesSinceCheck >= cachePolicy.serverUpdatesBetweenChecks else { return false }
            state.serverUpdatesSinceCheck = 0
            return true
        }
        if due { enqueue("checking the cache size") { [self] store in try checkSize(store) } }
    }

    /// Counts what the store grew by since `before` (its total size then); once that adds up to
    /// ``LRUCachePolicy/bytesBetweenChecks`` since the last check, checks the size now. Runs on the
    /// queue.
    private func grew(_ store: any ClientStore, since before: Int) throws {
        let growth = store.size.total - before
        guard growth > 0 else { return }
        let due = state.withLock { state in
            state.bytesSinceCheck += growth
            return state.bytesSinceCheck >= cachePolicy.bytesBetweenChecks
        }
        if due { try checkSize(store) }
    }

    /// Evicts least recently used inactive queries while the store is over its size, or its files
    /// over what the policy allows on disk, and something inactive is left. Pages that eviction
    /// frees are reused by the data that comes next; they go back to the file system, with the
    /// journal emptied, when the files are over, before anything is evicted for that. Runs on the
    /// queue.
    private func checkSize(_ store: any ClientStore) throws {
        state.withLock { $0.bytesSinceCheck = 0 }
        var reclaimed = false
        while true {
            let queries = try store.trackedQueries()
            let over = try whatIsOver(store, queries: queries)
            if over.onDisk, !reclaimed {
                try store.reclaimSpace()
                reclaimed = true
                continue
            }
            guard over.counted || over.onDisk else { return }
            let plan = cachePolicy.plan(evictingFrom: queries)
            guard !plan.isEmpty else { return }
            let before = (size: store.size, onDisk: store.bytesOnDisk)
            try store.evict(plan)
            if over.onDisk { try store.reclaimSpace() }
            logger.debug(
                "evicted \(plan.evicted.count) queries from the cache",
                metadata: [
                    "before": "\(before.size), \(before.onDisk) on disk",
                    "after": "\(store.size), \(store.bytesOnDisk) on disk",
                ])
            // Files that did not shrink (a read kept the journal from being emptied) are not a
            // reason to evict everything.
            if over.onDisk, store.bytesOnDisk >= before.onDisk { return }
        }
    }

    /// Whether the store counts more than its size, and whether its files take more than the
    /// policy allows on disk (rows that fill their pages badly take more than they count).
    private func whatIsOver(
        _ store: any ClientStore, queries: [TrackedQuery]
    ) throws -> (counted: Bool, onDisk: Bool) {
        let size = store.size
        if cachePolicy.isOver(size, trackedQueries: queries.count) { return (true, false) }
        let onDisk = store.bytesOnDisk
        guard onDisk > cachePolicy.diskAllowance(pendingWriteBytes: size.pendingWrites, keptBytes: 0) else {
            return (false, false)
        }
        let kept = try store.cachedBytes(under: queries.filter(\.isActive).map(\.path))
        return (false, onDisk > cachePolicy.diskAllowance(pendingWriteBytes: size.pendingWrites, keptBytes: kept))
    }

    /// Checks the cache against its size now (as after every
    /// ``LRUCachePolicy/serverUpdatesBetweenChecks`` server updates) and waits until it is done.
    func evictNow() {
        queue.sync { [self] in
            guard let store = state.withLock({ $0.store }) else { return }
            do { try checkSize(store) } catch { failed("checking the cache size", error) }
        }
    }

    /// What the cache holds and what its files take, once everything queued so far is stored;
    /// `nil` without a store. Does not block the caller.
    func statistics() async -> CacheStatistics? {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                guard let store = state.withLock({ $0.store }) else { return continuation.resume(returning: nil) }
                do {
                    let active = try store.trackedQueries().filter(\.isActive).map(\.path)
                    let size = store.size
                    continuation.resume(
                        returning: CacheStatistics(
                            cachedBytes: size.serverCache, pendingWriteBytes: size.pendingWrites,
                            keptBytes: try store.cachedBytes(under: active), bytesOnDisk: store.bytesOnDisk,
                            limitBytes: cachePolicy.maxBytes))
                } catch {
                    failed("reading the cache statistics", error)
                    continuation.resume(returning: nil)
                }
            }
        }
    }

    // MARK: Tracked queries

    /// A listen started for `query`: it is tracked, active and used now.
    func setActive(_ query: QuerySpec) { update(query, create: true) { $0.isActive = true } }

    /// The listen for `query` stopped.
    func setInactive(_ query: QuerySpec) { update(query, create: false) { $0.isActive = false } }

    /// The server confirmed the data of `query`; `window` is what a filtered query's view holds
    /// then (its children become the query's keys: an unchanged window is not sent again).
    func setComplete(_ query: QuerySpec, window: Node?) {
        update(query, create: false) { $0.isComplete = true }
        guard !query.params.loadsAllData, let window else { return }
        let keys = Set(window.children.map { $0.key.string })
        let children = Dictionary(uniqueKeysWithValues: window.children.map { (Path($0.key.string), $0.value) })
        enqueue("caching a query's data") { store in
            guard let id = try Self.tracked(query, in: store)?.id else { return }
            try store.mergeServerCache(children, at: query.path)
            try store.setTrackedKeys(keys, queryID: id)
        }
    }

    /// Changes the tracked query for `query` (creating it if asked), on the queue, in order with
    /// the other changes.
    private func update(
        _ query: QuerySpec, create: Bool, _ change: @escaping @Sendable (inout TrackedQuery) -> Void
    ) {
        let tracked = Self.trackedQuery(query)
        let now = (Date().timeIntervalSince1970 * 1000).rounded()
        enqueue("tracking a query") { [self] store in
            var entry: TrackedQuery
            if let existing = try Self.tracked(tracked, in: store) {
                entry = existing
            } else {
                guard create else { return }
                let id = try state.withLock { state throws in
                    let id = try state.nextTrackedID ?? store.nextTrackedQueryID()
                    state.nextTrackedID = id + 1
                    return id
                }
                entry = TrackedQuery(
                    id: id, path: tracked.path, queryIdentifier: tracked.params.queryIdentifier,
                    params: tracked.params.wireObject ?? [:], lastUse: 0, isComplete: false, isActive: false)
            }
            change(&entry)
            entry.lastUse = now
            try store.saveTrackedQuery(entry)
        }
    }

    /// The stored tracked query for `query`.
    private static func tracked(_ query: QuerySpec, in store: any ClientStore) throws -> TrackedQuery? {
        let tracked = trackedQuery(query)
        return try store.trackedQuery(at: tracked.path, queryIdentifier: tracked.params.queryIdentifier)
    }

    /// A query that loads all data at its path is tracked as the default query there.
    private static func trackedQuery(_ query: QuerySpec) -> QuerySpec {
        query.params.loadsAllData ? QuerySpec(path: query.path) : query
    }

    private static func key(_ query: QuerySpec) -> String {
        let tracked = trackedQuery(query)
        return key(path: tracked.path, identifier: tracked.params.queryIdentifier)
    }

    private static func key(path: Path, identifier: String) -> String { path.wireString + "|" + identifier }

    private static func isComplete(_ query: QuerySpec, in tracked: [String: TrackedQuery]) -> Bool {
        if tracked[key(query)]?.isComplete == true { return true }
        var path: Path? = query.path
        while let current = path {
            if tracked[key(path: current, identifier: QueryParams.default.queryIdentifier)]?.isComplete == true {
                return true
            }
            path = current.parent
        }
        return false
    }

    /// The complete filtered queries at `path` (their keys are read from the store) and the
    /// children with a complete default query.
    private static func knownCompleteChildren(
        at path: Path, in tracked: [String: TrackedQuery]
    ) -> (ids: [Int], children: Set<String>) {
        var ids: [Int] = []
        var children: Set<String> = []
        let defaultID = QueryParams.default.queryIdentifier
        for query in tracked.values where query.isComplete {
            if query.path == path, query.queryIdentifier != defaultID {
                ids.append(query.id)
            } else if query.queryIdentifier == defaultID, query.path.parent == path, let name = query.path.back {
                children.insert(name.string)
            }
        }
        return (ids, children)
    }

    // MARK: Writes

    /// The writes kept from an earlier run, in id order.
    func restoredWrites() -> [PersistedWrite] { read("reading the writes") { try $0.writes() } ?? [] }

    /// Stores a write; `saved` learns whether it is on disk.
    func saveWrite(_ write: PersistedWrite, saved: @escaping @Sendable (Bool) -> Void) {
        queue.async { [self] in
            guard let store = state.withLock({ $0.store }) else { return saved(false) }
            let before = store.size.total
            do {
                try store.saveWrite(write)
            } catch {
                failed("saving a write", error)
                return saved(false)
            }
            saved(true)
            do { try grew(store, since: before) } catch { failed("checking the cache size", error) }
        }
    }

    /// Forgets write `id`. When it was acknowledged, what it wrote (`acknowledged`, by location)
    /// becomes server data where tracked queries keep it, unless a complete listen keeps that
    /// location synced (the server sends it then); data no query keeps is not cached.
    func removeWrite(id: Int, acknowledged: [Path: Node]) {
        enqueue("removing a write") { try $0.removeWrite(id: id) }
        guard !acknowledged.isEmpty else { return }
        enqueue("caching an acknowledged write") { store in
            for (path, node) in acknowledged {
                let above = try store.trackedQueries(atOrAbove: path)
                if above.contains(where: { $0.isActive && $0.isComplete && $0.queryIdentifier == Self.defaultID }) {
                    continue
                }
                if !above.isEmpty {
                    try store.overwriteServerCache(node, at: path)
                    continue
                }
                for query in try store.trackedQueries(below: path) {
                    try store.overwriteServerCache(
                        node.child(at: Path.relative(from: path, to: query.path)), at: query.path)
                }
            }
        }
        serverUpdated()
    }

    private static let defaultID = QueryParams.default.queryIdentifier

    func removeAllWrites() { enqueue("removing the writes") { try $0.removeAllWrites() } }

    // MARK: Transactions

    /// The named transactions kept from an earlier run, in id order.
    func restoredTransactions() -> [PersistedTransaction] {
        read("reading the transactions") { try $0.transactions() } ?? []
    }

    /// Stores a named transaction.
    func saveTransaction(_ transaction: PersistedTransaction) {
        enqueue("saving a transaction") { try $0.saveTransaction(transaction) }
    }

    /// Stores the put transactions `ids` go out in, and returns once it is on disk (it must be
    /// before it is sent).
    func saveTransactionPut(_ put: PersistedTransaction.Put, ids: [Int]) {
        _ = read("saving a transaction's put") { try $0.saveTransactionPut(put, ids: ids) }
    }

    /// Forgets a finished transaction.
    func removeTransaction(id: Int) { enqueue("removing a transaction") { try $0.removeTransaction(id: id) } }
}
