public import Auth

/// How a ``CanopyServer`` runs. Every field has a working default.
public struct ServerConfiguration: Sendable {
    /// Address to bind (default `127.0.0.1`).
    public var host: String = "127.0.0.1"
    /// Port to bind; `0` picks a free one (default `9000`).
    public var port: Int = 9000
    /// Folder holding one SQLite database per namespace; `nil` keeps data in memory only.
    public var dataDirectory: String? = "./canopy-data"
    /// The namespace of clients that name none (no `ns`, and a Host that is an IP or localhost).
    public var defaultNamespace: String = "default"
    /// Whether an unknown namespace is created on first use (otherwise REST answers 404).
    public var createsNamespaces: Bool = true
    /// Interval of the server's WebSocket pings; a peer silent for two intervals is dropped.
    public var heartbeatInterval: Duration = .seconds(20)
    /// Interval of `keep-alive` events on REST event streams.
    public var sseKeepaliveInterval: Duration = .seconds(30)
    /// Largest realtime message or REST body accepted, in bytes.
    public var maxMessageBytes: Int = 16 * 1024 * 1024
    /// Most bytes queued for a realtime connection that does not read them (a stalled or too slow
    /// client); past it the server closes the connection, which runs its onDisconnect writes.
    public var maxPendingOutboundBytes: Int = 64 * 1024 * 1024
    /// Whether commits are fsynced (survive power loss) or only written (survive a process crash).
    public var fsync: Bool = true
    /// Longest a graceful shutdown waits for connections to close and hand over their onDisconnect
    /// writes before it cancels what is left (queued commits are still written).
    public var shutdownTimeout: Duration = .seconds(10)
    /// How clients prove who they are: the keys of ID tokens, their issuer and audience, the admin
    /// secret, emulator mode. By default no token is accepted and every client is unauthenticated.
    public var authentication = TokenVerifierConfiguration()
    /// A rules document (JSON with comments, as Firebase's `database.rules.json`) applied to every
    /// namespace when it opens, replacing the rules it stored; `nil` keeps each namespace's own.
    /// A namespace that never had rules set allows everything.
    public var rulesFile: String?

    public init() {}
}
