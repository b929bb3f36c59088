import Synchronization
import Transport

/// What a database did with the writes clients named with a ``WriteID``, so that a write resent
/// after a lost connection is answered as before instead of being applied again.
///
/// A client numbers its writes in the order it sends them, and one connection's writes are run in
/// order, so for each client it is enough to know the highest number seen and how each recent write
/// that was not applied ended (refused, or a stale compare-and-set): a number at or below the
/// highest with no such record was applied. Bounded, against clients that make up ids or send
/// refused writes on purpose: ``recentPerClient`` records per client, ``clientLimit`` clients and
/// ``recordLimit`` records in all (past a limit, the least recently seen half of the clients is
/// forgotten in one sweep; a forgotten client's resends are run again, as without write ids).
///
/// Thread-safe: the database records writes as it runs them, commit callbacks as they end.
final class AppliedWrites: Sendable {
    /// How a write ended when it first ran.
    enum Disposition: Sendable, Equatable {
        /// Applied to the tree (its commit may still be under way, or may have failed).
        case applied
        /// Refused before anything changed.
        case refused(WriteError)
        /// A compare-and-set that found other data.
        case stale
    }

    private struct Client {
        var highest: Int
        /// The writes at most ``recentPerClient`` below `highest` that were not applied.
        var notApplied: [Int: Disposition] = [:]
        var lastSeen: UInt64

        /// Records `sequence`; returns how many records were added (negative when some went).
        mutating func record(_ sequence: Int, _ disposition: Disposition, at now: UInt64) -> Int {
            highest = max(highest, sequence)
            lastSeen = now
            let before = notApplied.count
            if disposition == .applied {
                notApplied[sequence] = nil
            } else {
                notApplied[sequence] = disposition
            }
            if notApplied.count > 2 * AppliedWrites.recentPerClient {
                let oldest = highest - AppliedWrites.recentPerClient
                notApplied = notApplied.filter { $0.key > oldest }
            }
            return notApplied.count - before
        }
    }

    static let recentPerClient = 1_024
    static let clientLimit = 10_000
    static let recordLimit = 200_000

    private struct State {
        var clients: [String: Client] = [:]
        var records = 0
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    /// How write `id` ended, if it already ran.
    func disposition(of id: WriteID) -> Disposition? {
        state.withLock { state in
            guard let client = state.clients[id.client], id.sequence <= client.highest else { return nil }
            return client.notApplied[id.sequence] ?? .applied
        }
    }

    /// Records how write `id` ended when it first ran.
    func record(_ id: WriteID, _ disposition: Disposition) {
        state.withLock { state in
            state.clock += 1
            let now = state.clock
            let isNew = state.clients[id.client] == nil
            state.records += state.clients[id.client, default: Client(highest: id.sequence, lastSeen: now)]
                .record(id.sequence, disposition, at: now)
            guard (isNew && state.clients.count > Self.clientLimit) || state.records > Self.recordLimit else { return }
            let cutoff = state.clients.values.map(\.lastSeen).sorted()[state.clients.count / 2]
            state.clients = state.clients.filter { $0.value.lastSeen >= cutoff }
            state.records = state.clients.values.reduce(0) { $0 + $1.notApplied.count }
        }
    }

    /// How many refusals and stale compare-and-sets are remembered, over all clients.
    var recordCount: Int { state.withLock { $0.records } }

    /// The clients whose writes are remembered.
    var clientCount: Int { state.withLock { $0.clients.count } }
}
