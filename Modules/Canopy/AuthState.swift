/// How the server took the auth token this client gave (``Database/setAuthToken(_:)``).
///
/// While a token is being checked or was refused, writes wait: they are neither sent nor failed,
/// and go out in their order once a token is accepted (or the app signs out).
public enum AuthState: Sendable, Equatable, CustomStringConvertible {
    /// No token: the client is unauthenticated.
    case signedOut
    /// A token waits for a connection or for the server's answer.
    case authenticating
    /// The server accepted the token.
    case authenticated
    /// The server refused the token (`expired_token`, `invalid_token`, …) or revoked it, or the
    /// token provider failed (`token_provider_failed`); writes wait for a new one. After 3 refusals
    /// in a row the token is not sent again. `status` is the realtime protocol's status, typed by
    /// ``refusal``; `reason` is the server's message, or the provider's error.
    case refused(status: String, reason: String)

    public var description: String {
        switch self {
        case .signedOut: "signed out"
        case .authenticating: "authenticating"
        case .authenticated: "authenticated"
        case .refused(let status, let reason): "token refused (\(status)): \(reason)"
        }
    }
}

extension AuthState {
    /// Why the token was refused, as an ``AuthRefusal``; `nil` unless the state is
    /// ``refused(status:reason:)``.
    ///
    /// ```swift
    /// database.observeAuthState { state in
    ///     switch state.refusal {
    ///     case .expiredToken?, .invalidToken?: showSignIn()
    ///     case .tokenProviderFailed?: retryLater()
    ///     default: break
    ///     }
    /// }
    /// ```
    public var refusal: AuthRefusal? {
        if case .refused(let status, _) = self { AuthRefusal(status: status) } else { nil }
    }

    var isRefused: Bool { refusal != nil }
}

/// Why the client has no accepted token: the status the server refused or revoked it with, or the
/// token provider failing. ``status`` is the status as the realtime protocol spells it.
public enum AuthRefusal: Sendable, Hashable {
    /// `invalid_token`: the server cannot verify the token (malformed, a bad signature, another
    /// issuer or audience, …); another token is needed.
    case invalidToken
    /// `expired_token`: the token expired, or the server revoked it when it did; the token
    /// provider is asked for a fresh one.
    case expiredToken
    /// `permission_denied`: the server does not accept this credential (Firebase's servers may
    /// answer this where Canopy answers `invalid_token`).
    case permissionDenied
    /// `token_provider_failed`: the ``AuthTokenProvider`` threw; the state's `reason` describes
    /// its error. The server was not asked.
    case tokenProviderFailed
    /// A status this SDK does not know, as the server sent it.
    case other(String)

    /// The refusal a status names (``other(_:)`` for one not listed above).
    public init(status: String) {
        switch status {
        case "invalid_token": self = .invalidToken
        case "expired_token": self = .expiredToken
        case "permission_denied": self = .permissionDenied
        case "token_provider_failed": self = .tokenProviderFailed
        default: self = .other(status)
        }
    }

    /// The status as the realtime protocol spells it, such as `expired_token`.
    public var status: String {
        switch self {
        case .invalidToken: "invalid_token"
        case .expiredToken: "expired_token"
        case .permissionDenied: "permission_denied"
        case .tokenProviderFailed: "token_provider_failed"
        case .other(let status): status
        }
    }
}

/// Supplies ID tokens to ``Database/setAuthTokenProvider(_:)``: called on connect and, with
/// `forceRefresh` true, after the server refused or revoked the token as expired. `nil` signs out.
public typealias AuthTokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String?
