import Dispatch
import Logging
import Synchronization
import Transport
import Tree

extension Repo {
    /// The app's auth token and how the server took it.
    struct AuthSession: Sendable {
        var token: String?
        var state: AuthState = .signedOut
        /// Refusals of `token` in a row; at ``maxRefusals`` it is not sent again.
        var refusals = 0
        var observers: [Int: @Sendable (AuthState) -> Void] = [:]
        var nextObserver = 1
    }

    /// As the official clients do: a token refused this many times in a row is not retried.
    static let maxAuthRefusals = 3

    /// Whether writes may go out now: without a token, or once the server accepted it.
    func writesMayGo(_ state: State) -> Bool {
        state.auth.token == nil || state.auth.state == .authenticated
    }

    /// Uses `token` from now on (`nil` signs out), kept on the device with persistence on.
    func setAuthToken(_ token: String?) {
        persistence?.setSetting(Self.authTokenSetting, token)
        let released = state.withLock { state -> Bool in
            state.auth.token = token
            state.auth.refusals = 0
            if token == nil {
                setAuthState(.signedOut, in: &state)
                _ = send(.unauth, in: &state) { _, _ in }
                resendWrites(in: &state)
                return true
            }
            setAuthState(.authenticating, in: &state)
            sendAuth(in: &state)
            return false
        }
        if released { rerunUnsentTransactions() }
    }

    static let authTokenSetting = "auth_token"

    /// Sends the token (on a new connection, before anything else but stats), unless it was refused
    /// too often.
    func sendAuth(in state: inout State) {
        guard let token = state.auth.token, state.auth.refusals < Self.maxAuthRefusals else { return }
        // A refused token stays reported refused while it is tried again.
        if !state.auth.state.isRefused { setAuthState(.authenticating, in: &state) }
        _ = send(.auth(credential: token), in: &state) { [self] status, data in
            authAnswered(token, status: status, data: data)
        }
    }

    private func authAnswered(_ token: String, status: String, data: JSONValue) {
        let accepted = state.withLock { state -> Bool in
            guard state.auth.token == token, status != "disconnected" else { return false }
            if status == "ok" {
                state.auth.refusals = 0
                setAuthState(.authenticated, in: &state)
                resendWrites(in: &state)
                return true
            }
            state.auth.refusals += 1
            let reason = data.stringValue ?? status
            logger.warning(
                "the server refused the auth token; writes wait for a new one",
                metadata: ["status": "\(status)", "reason": "\(reason)", "refusals": "\(state.auth.refusals)"])
            setAuthState(.refused(status: status, reason: reason), in: &state)
            return false
        }
        if accepted { rerunUnsentTransactions() }
    }

    /// The server revoked the token (`ac`): writes wait for a new one.
    func authRevoked(status: String, reason: String) {
        state.withLock { state in
            guard state.auth.token != nil else { return }
            setAuthState(.refused(status: status, reason: reason), in: &state)
        }
    }

    func setAuthState(_ new: AuthState, in state: inout State) {
        guard state.auth.state != new else { return }
        state.auth.state = new
        for observer in state.auth.observers.values { state.callbackQueue.async { observer(new) } }
    }

    /// Calls `callback` with the current state and each change; returns a handle for
    /// ``removeAuthObserver(_:)``.
    func observeAuth(_ callback: @escaping @Sendable (AuthState) -> Void) -> Int {
        state.withLock { state in
            let id = state.auth.nextObserver
            state.auth.nextObserver += 1
            state.auth.observers[id] = callback
            let current = state.auth.state
            state.callbackQueue.async { callback(current) }
            return id
        }
    }

    func removeAuthObserver(_ id: Int) { state.withLock { _ = $0.auth.observers.removeValue(forKey: id) } }
}
