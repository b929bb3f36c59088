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
    /// The server refused the token (`expired_token`, `invalid_token`, …) or revoked it; writes
    /// wait for a new one. After 3 refusals in a row the token is not sent again.
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
    var isRefused: Bool {
        if case .refused = self { return true }
        return false
    }
}

/// Supplies ID tokens to ``Database/setAuthTokenProvider(_:)``: called on connect and, with
/// `forceRefresh` true, after the server refused or revoked the token as expired. `nil` signs out.
public typealias AuthTokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String?
