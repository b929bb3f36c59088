import Synchronization

/// The bytes the server holds for readers that do not keep up (realtime connections and event
/// streams), against one total for the process: when the total passes
/// ``ServerConfiguration/maxTotalPendingOutboundBytes``, readers are closed, the one stalled for the
/// longest first, until it is back under.
///
/// A reader counts only while it holds at least ``stallThreshold`` bytes, so readers that keep up
/// never touch the shared state.
final class OutboundBudget: Sendable {
    /// Queued bytes from which a reader counts as stalled.
    static let stallThreshold = 64 * 1024

    let limit: Int
    private let state = Mutex(State())

    private struct State {
        var holders: [Int: Holder] = [:]
        var total = 0
    }

    private struct Holder {
        var bytes: Int
        let since: ContinuousClock.Instant
        let close: @Sendable () -> Void
    }

    init(limit: Int) {
        self.limit = limit
    }

    /// The bytes held by stalled readers now.
    var total: Int { state.withLock { $0.total } }

    /// Records that reader `id` has `bytes` queued and unread; `close` ends it if the total needs
    /// room. Returns whether the reader counts now (call again while it does, and when it drains).
    func record(_ id: Int, bytes: Int, close: @escaping @Sendable () -> Void) -> Bool {
        let (counts, closing) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
            guard bytes >= Self.stallThreshold else {
                if let old = state.holders.removeValue(forKey: id) { state.total -= old.bytes }
                return (false, [])
            }
            if var holder = state.holders[id] {
                state.total += bytes - holder.bytes
                holder.bytes = bytes
                state.holders[id] = holder
            } else {
                state.holders[id] = Holder(bytes: bytes, since: .now, close: close)
                state.total += bytes
            }
            guard state.total > limit else { return (true, []) }
            var closing: [@Sendable () -> Void] = []
            for (key, holder) in state.holders.sorted(by: { $0.value.since < $1.value.since }) {
                guard state.total > limit else { break }
                state.holders[key] = nil
                state.total -= holder.bytes
                closing.append(holder.close)
            }
            return (state.holders[id] != nil, closing)
        }
        for close in closing { close() }
        return counts
    }

    /// Reader `id` went away.
    func remove(_ id: Int) {
        state.withLock { state in
            if let old = state.holders.removeValue(forKey: id) { state.total -= old.bytes }
        }
    }
}
