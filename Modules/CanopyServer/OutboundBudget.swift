import Synchronization

/// The bytes the server holds for readers that do not keep up (realtime connections and event
/// streams), against one total for the process: when the total passes
/// ``ServerConfiguration/maxTotalPendingOutboundBytes``, readers are closed, the one stalled for the
/// longest first, until it is back under.
///
/// A reader counts only while it holds more than ``stallThreshold`` bytes, so readers that keep up
/// never touch the shared state.
///
/// A burst (a total of at least ``burstBytes``) that is over, the total back under a quarter of
/// its peak, calls `burstEnded`: what the readers held was freed, and can be given back to the
/// system (``HeapTrimmer``).
final class OutboundBudget: Sendable {
    /// Queued bytes over which a reader counts as stalled: more than a socket NIO still calls
    /// writable holds (its default high water mark).
    static let stallThreshold = 64 * 1024
    /// The smallest total that makes a burst.
    static let burstBytes = 16 * 1024 * 1024

    let limit: Int
    private let burstEnded: @Sendable () -> Void
    private let state = Mutex(State())

    private struct State {
        var holders: [Int: Holder] = [:]
        var total = 0
        /// The highest total since the last burst ended.
        var peak = 0

        /// Notes the total's change; returns whether a burst just ended.
        mutating func measured() -> Bool {
            peak = max(peak, total)
            guard peak >= OutboundBudget.burstBytes, total <= peak / 4 else { return false }
            peak = total
            return true
        }
    }

    private struct Holder {
        var bytes: Int
        let since: ContinuousClock.Instant
        let close: @Sendable () -> Void
    }

    init(limit: Int, burstEnded: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.burstEnded = burstEnded
    }

    /// The bytes held by stalled readers now.
    var total: Int { state.withLock { $0.total } }

    /// Records that reader `id` has `bytes` queued and unread; `close` ends it if the total needs
    /// room. Returns whether the reader counts now (call again while it does, and when it drains).
    func record(_ id: Int, bytes: Int, close: @escaping @Sendable () -> Void) -> Bool {
        let (counts, closing, ended) = state.withLock { state -> (Bool, [@Sendable () -> Void], Bool) in
            guard bytes > Self.stallThreshold else {
                if let old = state.holders.removeValue(forKey: id) { state.total -= old.bytes }
                return (false, [], state.measured())
            }
            if var holder = state.holders[id] {
                state.total += bytes - holder.bytes
                holder.bytes = bytes
                state.holders[id] = holder
            } else {
                state.holders[id] = Holder(bytes: bytes, since: .now, close: close)
                state.total += bytes
            }
            // Before readers are closed to make room: the burst reached this.
            state.peak = max(state.peak, state.total)
            guard state.total > limit else { return (true, [], state.measured()) }
            var closing: [@Sendable () -> Void] = []
            for (key, holder) in state.holders.sorted(by: { $0.value.since < $1.value.since }) {
                guard state.total > limit else { break }
                state.holders[key] = nil
                state.total -= holder.bytes
                closing.append(holder.close)
            }
            return (state.holders[id] != nil, closing, state.measured())
        }
        for close in closing { close() }
        if ended { burstEnded() }
        return counts
    }

    /// Reader `id` went away.
    func remove(_ id: Int) {
        let ended = state.withLock { state in
            if let old = state.holders.removeValue(forKey: id) { state.total -= old.bytes }
            return state.measured()
        }
        if ended { burstEnded() }
    }
}
