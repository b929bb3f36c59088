/// Why a ``RealtimeClient`` could not connect, or why its connection ended.
public enum RealtimeClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database URL cannot be used, and why.
    case invalidURL(String, reason: String)
    /// The connection or the WebSocket upgrade failed; the message says where and why.
    case connectFailed(String)
    /// The server's TLS certificate was refused; the message says whose and why (not trusted, not
    /// naming the host, not the pinned one). Trying again will not help until the server's
    /// certificate or the client's trust changes.
    case certificateRefused(String)
    /// No hello came within the connect timeout.
    case timedOut(Duration)
    /// The server sent the client to `host` instead of greeting it (the protocol's redirect `r`, sent
    /// by a server that does not serve the namespace): connect there.
    case redirected(host: String)
    /// The connection ended; the reason says how (`"shutdown: …"` when the server asked the
    /// client not to reconnect).
    case closed(String)

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid database URL \"\(url)\": \(reason)"
        case .connectFailed(let message): "could not connect: \(message)"
        case .certificateRefused(let message): "certificate refused: \(message)"
        case .timedOut(let timeout): "no hello from the server within \(timeout)"
        case .redirected(let host): "the server redirected the client to \(host)"
        case .closed(let reason): "connection closed: \(reason)"
        }
    }
}
