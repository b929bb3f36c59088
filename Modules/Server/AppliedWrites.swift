import Synchronization
import Transport

/// What a database did with the writes clients named with a ``WriteID``, so that a write resent
/// after a lost connection is answered as before instead of being applied again.
///
/// A client numbers its writes in the order it sends them, and one connection's writes are run in
/// order, so for each client it is enough to know the highest number seen and how each recent write
/// ended. Bounded: ``recentPerClient`` writes per client and ``clientLimit`` clients (past the limit
/// the least recently seen half is forgotten in one sweep). A resend numbered at or below the
/// highest seen whose disposition was forgotten is taken as applied: a client resends only the
/// writes whose answers it lost, its most recent ones.
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
        var recent: [Int: Disposition] = [:]
        var lastSeen: UInt64

        mutating func record(_ sequence: Int, _ disposition: Disposition, at now: UInt64) {
            highest = max(highest, sequence)
            lastSeen = now
            recent[sequence] = disposition
            if recent.count > 2 * AppliedWrites.recentPerClient {
                let oldest = highest - AppliedWrites.recentPerClient
                recent = recent.filter { $0.key > oldest }
            }
        }
    }

    static let recentPerClient = 1_024
    static let clientLimit = 10_000

    private struct State {
        var clients: [String: Client] = [:]
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    /// How write `id` ended, if it already ran.
    func disposition(of id: WriteID) -> Disposition? {
        state.withLock { state in
            guard let client = state.clients[id.client], id.sequence <= client.highest else { return nil }
            return client.recent[id.sequence] ?? .applied
        }
    }

    /// Records how write `id` ended when it first ran.
    func record(_ id: WriteID, _ disposition: Disposition) {
        state.withLock { state in
            state.clock += 1
            let now = state.clock
            let isNew = state.clients[id.client] == nil
            state.clients[id.client, default: Client(highest: id.sequence, lastSeen: now)]
                .record(id.sequence, disposition, at: now)
            guard isNew, state.clients.count > Self.clientLimit else { return }
            let cutoff = state.clients.values.map(\.lastSeen).sorted()[state.clients.count / 2]
            state.clients = state.clients.filter { $0.value.lastSeen >= cutoff }
        }
    }

    /// The clients whose writes are remembered.
    var clientCount: Int { state.withLock { $0.clients.count } }
}
