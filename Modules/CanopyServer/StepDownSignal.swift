import Synchronization

/// Fires once when a namespace's store stops serving it (a PostgreSQL store that lost its lease);
/// the ``DatabaseRegistry`` then closes the namespace. A signal that fires before anyone listens
/// is remembered.
final class StepDownSignal: Sendable {
    private let state = Mutex<(fired: Bool, handler: (@Sendable () -> Void)?)>((false, nil))

    func fire() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.fired else { return nil }
            state.fired = true
            defer { state.handler = nil }
            return state.handler
        }
        handler?()
    }

    /// Whether the signal fired.
    var hasFired: Bool { state.withLock { $0.fired } }

    /// Runs `handler` when the signal fires (at once if it has).
    func onFire(_ handler: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.fired { return true }
            state.handler = handler
            return false
        }
        if now { handler() }
    }
}
