import Synchronization

/// What one client saw of its connections, for counting the onDisconnect operations that must
/// have run: one per ended connection whose registration was acknowledged (give or take those
/// whose registration was never answered, which the server may or may not have stored).
public final class ConnectionLedger: Sendable {
    public struct Counts: Sendable, CustomStringConvertible {
        public var opened = 0
        public var ended = 0
        public var isOpen = false
        /// Registrations acknowledged on the open connection.
        public var registeredOnCurrent = 0
        /// Registrations acknowledged on connections that ended.
        public var endedRegistered = 0
        /// Ended connections whose registration got no answer (it may or may not have been stored).
        public var endedUnanswered = 0
        public var refused = 0
        /// Registrations sent (see ``ConnectionLedger/sent()``) and not answered yet. The SDK sends
        /// one cut off by its connection's end again on the next connection, so it stays
        /// outstanding until that answer.
        public var outstanding = 0

        /// How many times the client's onDisconnect operations may have run: from those of every
        /// ended connection that registered to those plus the ones whose registration went
        /// unanswered.
        public var expectedRuns: ClosedRange<Int> { endedRegistered...(endedRegistered + endedUnanswered) }

        public var description: String {
            "opened \(opened), ended \(ended), open \(isOpen), registered now \(registeredOnCurrent), "
                + "ended registered \(endedRegistered), ended unanswered \(endedUnanswered), refused \(refused), "
                + "outstanding \(outstanding)"
        }
    }

    private let state = Mutex(Counts())

    public init() {}

    public var counts: Counts { state.withLock { $0 } }

    /// A connection opened (ending the open one, if the client had not noticed its end).
    public func opened() {
        state.withLock { counts in
            if counts.isOpen { Self.end(&counts, unanswered: false) }
            counts.opened += 1
            counts.isOpen = true
            counts.registeredOnCurrent = 0
        }
    }

    /// A registration was sent on the open connection.
    public func sent() {
        state.withLock { $0.outstanding += 1 }
    }

    /// A registration was answered: `accepted`, or refused.
    public func registered(_ accepted: Bool) {
        state.withLock { counts in
            counts.outstanding = max(0, counts.outstanding - 1)
            if accepted { counts.registeredOnCurrent += 1 } else { counts.refused += 1 }
        }
    }

    /// The open connection ended; `unanswered`: its registration got no answer.
    public func ended(unanswered: Bool = false) {
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
