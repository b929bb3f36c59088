import Synchronization

/// An action run at most once, by whichever of its callers comes first.
final class OnceAction: Sendable {
    private let action: Mutex<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    func run() {
        let action = self.action.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }
}
