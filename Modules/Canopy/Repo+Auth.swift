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
        var observers: [Int: @isolated(any) @Sendable (AuthState) -> Void] = [:]
        var nextObserver = 1
        /// Supplies tokens on connect and after an expiry; see ``Database/setAuthTokenProvider(_:)``.
        var provider: AuthTokenProvider?
        /// Counts providers set, so that an answer from a replaced one is dropped.
        var providerGeneration = 0
        var fetching = false
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
                _ = send(.unauth, in: &state) { _ in }
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
        _ = send(.auth(credential: token), in: &state) { [self] outcome in
            guard case .answered(let status, let data) = outcome else { return }
            authAnswered(token, status: status, data: data)
        }
    }

    private func authAnswered(_ token: String, status: ResponseStatus, data: JSONValue) {
        let accepted = state.withLock { state -> Bool? in
            guard state.auth.token == token else { return nil }
            if status == .ok {
                state.auth.refusals = 0
                setAuthState(.authenticated, in: &state)
                resendWrites(in: &state)
                return true
            }
            state.auth.refusals += 1
            let reason = data.stringValue ?? status.text
            logger.warning(
                "the server refused the auth token; writes wait for a new one",
                metadata: ["status": "\(status)", "reason": "\(reason)", "refusals": "\(state.auth.refusals)"])
            setAuthState(.refused(status: status.text, reason: reason), in: &state)
            return false
        }
        switch accepted {
        case true?: rerunUnsentTransactions()
        case false?: fetchProvidedToken(forceRefresh: AuthRefusal(status: status.text) == .expiredToken)
        case nil: break
        }
    }

    /// The server revoked the token (`ac`): writes wait for a new one, which the provider is asked
    /// for.
    func authRevoked(status: String, reason: String) {
        state.withLock { state in
            guard state.auth.token != nil else { return }
            setAuthState(.refused(status: status, reason: reason), in: &state)
        }
        fetchProvidedToken(forceRefresh: true)
    }

    // MARK: Token provider

    /// Uses `provider` for tokens from now on (`nil` stops), asking it for one at once.
    func setAuthTokenProvider(_ provider: AuthTokenProvider?) {
        state.withLock { state in
            state.auth.provider = provider
            state.auth.providerGeneration += 1
            state.auth.fetching = false
        }
        fetchProvidedToken(forceRefresh: false)
    }

    /// Asks the provider for a token and uses it if it changed. With `forceRefresh` (the token in use
    /// was refused as expired or revoked) the same token is not sent again; a provider that fails
    /// leaves the state ``AuthState/refused(status:reason:)`` with status `token_provider_failed`
    /// (``AuthRefusal/tokenProviderFailed``) and the error's description as the reason.
    func fetchProvidedToken(forceRefresh: Bool) {
        let found = state.withLock { state -> (AuthTokenProvider, Int)? in
            guard let provider = state.auth.provider, !state.auth.fetching else { return nil }
            state.auth.fetching = true
            return (provider, state.auth.providerGeneration)
        }
        guard let (provider, generation) = found else { return }
        Task { [self] in
            let result: Result<String?, any Error>
            do {
                result = .success(try await provider(forceRefresh))
            } catch {
                result = .failure(error)
            }
            let use = state.withLock { state -> String?? in
                guard state.auth.providerGeneration == generation else { return .none }
                state.auth.fetching = false
                switch result {
                case .success(let token):
                    return token == state.auth.token ? .none : .some(token)
                case .failure(let error):
                    logger.warning("the auth token provider failed", metadata: ["error": "\(error)"])
                    let status = AuthRefusal.tokenProviderFailed.status
                    setAuthState(.refused(status: status, reason: "\(error)"), in: &state)
                    return .none
                }
            }
            if case .some(let token) = use { setAuthToken(token) }
        }
    }

    func setAuthState(_ new: AuthState, in state: inout State) {
        guard state.auth.state != new else { return }
        state.auth.state = new
        for observer in state.auth.observers.values { state.callbacks.deliver(observer, new) }
    }

    /// Calls `callback` with the current state and each change; returns a handle for
    /// ``removeAuthObserver(_:)``.
    func observeAuth(_ callback: @escaping @isolated(any) @Sendable (AuthState) -> Void) -> Int {
        state.withLock { state in
            let id = state.auth.nextObserver
            state.auth.nextObserver += 1
            state.auth.observers[id] = callback
            let current = state.auth.state
            state.callbacks.deliver(callback, current)
            return id
        }
    }

    func removeAuthObserver(_ id: Int) { state.withLock { _ = $0.auth.observers.removeValue(forKey: id) } }
}
