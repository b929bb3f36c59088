import ServerStorage
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
/// Durable: what is remembered of a client is stored (``changes(for:seen:)``) in the transaction
/// of the writes of each turn in which its named writes ran, and read back when the namespace
/// opens (``restore(_:)``), by this process after a restart or by the one that takes the
/// namespace over; forgotten clients are removed from the store with the next turn that stores.
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
        /// Clients forgotten since the last ``changes(for:seen:)``, to remove from the store.
        var forgotten: Set<String> = []

        /// Forgets the least recently seen half of the clients when past a limit.
        mutating func sweepIfNeeded(addedClient: Bool) {
            guard (addedClient && clients.count > AppliedWrites.clientLimit) || records > AppliedWrites.recordLimit
            else { return }
            let cutoff = clients.values.map(\.lastSeen).sorted()[clients.count / 2]
            for (name, client) in clients where client.lastSeen < cutoff {
                clients[name] = nil
                if forgotten.count < AppliedWrites.clientLimit { forgotten.insert(name) }
            }
            records = clients.values.reduce(0) { $0 + $1.notApplied.count }
        }
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
            state.sweepIfNeeded(addedClient: isNew)
        }
    }

    /// Replaces what is remembered by what a store kept (least recently seen client first), when
    /// the namespace opens.
    func restore(_ stored: [StoredWriteIDs]) {
        state.withLock { state in
            state = State()
            for ids in stored {
                state.clock += 1
                var notApplied: [Int: Disposition] = [:]
                notApplied.reserveCapacity(ids.notApplied.count)
                for (sequence, outcome) in ids.notApplied where sequence <= ids.highest {
                    notApplied[sequence] =
                        switch outcome {
                        case .stale: .stale
                        case .refused(let status, let message):
                            .refused(WriteError(status: ResponseStatus(status), message: message))
                        }
                }
                state.records += notApplied.count - (state.clients[ids.client]?.notApplied.count ?? 0)
                state.clients[ids.client] = Client(highest: ids.highest, notApplied: notApplied, lastSeen: state.clock)
            }
            // A store written under other limits: brought within these, and the rest removed from it.
            state.sweepIfNeeded(addedClient: true)
        }
    }

    /// What to store so that the store holds what is remembered of `clients` (last seen at `seen`,
    /// milliseconds since 1970) and no longer holds the clients forgotten since the last call.
    func changes(for clients: Set<String>, seen: Int64) -> [WriteIDChange] {
        state.withLock { state in
            var changes: [WriteIDChange] = []
            if !state.forgotten.isEmpty {
                // One that came back is stored again once it writes; until then its old record stands.
                changes = state.forgotten.filter { state.clients[$0] == nil }.sorted().map { .forget(client: $0) }
                state.forgotten = []
            }
            for name in clients {
                guard let client = state.clients[name] else { continue }
                var notApplied: [Int: StoredWriteIDs.NotApplied] = [:]
                notApplied.reserveCapacity(client.notApplied.count)
                for (sequence, disposition) in client.notApplied {
                    switch disposition {
                    case .applied: continue
                    case .stale: notApplied[sequence] = .stale
                    case .refused(let error):
                        notApplied[sequence] = .refused(status: error.status.text, message: error.message)
                    }
                }
                changes.append(
                    .store(StoredWriteIDs(client: name, highest: client.highest, notApplied: notApplied, seen: seen)))
            }
            return changes
        }
    }

    /// How many refusals and stale compare-and-sets are remembered, over all clients.
    var recordCount: Int { state.withLock { $0.records } }

    /// The clients whose writes are remembered.
    var clientCount: Int { state.withLock { $0.clients.count } }
}
