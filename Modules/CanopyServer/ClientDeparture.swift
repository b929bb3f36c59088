import Synchronization

/// Notices a client leaving from the moment it is made, before what its leaving must undo exists:
/// an event stream's client may leave while the stream is still being registered, and the one
/// notice of a closed input comes once.
///
/// ```swift
/// let departure = ClientDeparture()
/// let handler = InputClosedHandler { departure.left() }   // installed first
/// // … register the stream …
/// departure.whenLeft(end)                                 // runs `end` now if the client left
/// ```
final class ClientDeparture: Sendable {
    private enum State {
        case present
        case left
        case watched(OnceAction)
    }

    private let state = Mutex(State.present)

    /// The client left: runs the action given to ``whenLeft(_:)``, or keeps the news for it.
    func left() {
        let action = state.withLock { state -> OnceAction? in
            switch state {
            case .present:
                state = .left
                return nil
            case .left:
                return nil
            case .watched(let action):
                return action
            }
        }
        action?.run()
    }

    /// Runs `action` when the client leaves, at once if it already left.
    func whenLeft(_ action: OnceAction) {
        let alreadyLeft = state.withLock { state -> Bool in
            if case .left = state { return true }
            state = .watched(action)
            return false
        }
        if alreadyLeft { action.run() }
    }
}
