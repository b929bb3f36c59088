import Dispatch
import ServerStorage
import Synchronization

/// A namespace the ``DatabaseRegistry`` holds open: its database, store and committer, and how
/// many leases use it.
final class OpenNamespace: Sendable {
    let name: String
    let database: Database
    private let store: any ServerStore
    private let queue: CommitQueue
    private let committer: Task<Void, Never>
    private let deferred: DeferredServerStore?
    private let keepsDataInMemory: Bool
    /// Fires when the store stops serving the namespace (PostgreSQL only).
    let stepDown: StepDownSignal?
    private let usage = Mutex(Usage())

    private struct Usage {
        var leases = 0
        var lastUsed = ContinuousClock.now
    }

    init(
        name: String, database: Database, store: any ServerStore, queue: CommitQueue, deferred: DeferredServerStore?,
        keepsDataInMemory: Bool, stepDown: StepDownSignal? = nil
    ) {
        self.name = name
        self.stepDown = stepDown
        self.database = database
        self.store = store
        self.queue = queue
        self.deferred = deferred
        self.keepsDataInMemory = keepsDataInMemory
        committer = Task { await queue.run() }
    }

    /// Since when no lease uses it; `nil` while one does.
    var idleSince: ContinuousClock.Instant? {
        usage.withLock { $0.leases == 0 ? $0.lastUsed : nil }
    }

    /// Whether closing it loses nothing: its data is on disk, or nothing was ever written to it.
    var canClose: Bool {
        !keepsDataInMemory || deferred?.isCreated == false
    }

    func acquire() {
        usage.withLock { $0.leases += 1 }
    }

    func release() {
        usage.withLock { usage in
            usage.leases -= 1
            usage.lastUsed = .now
        }
    }

    /// Commits what is queued, then closes the store (a PostgreSQL store releases its lease then),
    /// also when the server is being cancelled: an SQLite file left open keeps the next server that
    /// opens it out ("database is locked", seen in CI after a restart).
    ///
    /// The store closes on a thread of its own, not on NIO's blocking pool: its two threads may be
    /// busy loading a large namespace for many seconds, and a cancelled server that waited for them
    /// overran ServiceGroup's cancellation limit, which ends the process.
    func close() async {
        queue.finish()
        await committer.value
        let store = store
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            DispatchQueue(label: "canopy.namespace.close").async {
                try? store.close()
                closed.resume()
            }
        }
    }
}

/// A database in use by a realtime connection, an event stream or a REST request: its namespace
/// stays open until every lease on it is released (or dropped).
final class DatabaseLease: Sendable {
    let database: Database
    private let namespace: OpenNamespace
    private let released = Atomic(false)

    /// Takes a lease; call it on the registry, which decides what to close.
    init(_ namespace: OpenNamespace) {
        self.namespace = namespace
        database = namespace.database
        namespace.acquire()
    }

    /// Ends the lease (once; later calls do nothing).
    func release() {
        if !released.exchange(true, ordering: .acquiringAndReleasing) { namespace.release() }
    }

    deinit { release() }
}
