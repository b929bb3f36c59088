import Logging

/// What a ``RealtimeSession`` needs of the server, handed to it when it is made: the namespaces,
/// the sessions and connections open, credentials, metrics, limits, and where clients are sent.
///
/// One instance is shared by every connection (a class, so that each holds a reference rather than
/// a copy of a few hundred bytes).
final class RealtimeContext: Sendable {
    let databases: DatabaseRegistry
    let sessions: SessionRegistry
    let connections: OpenConnections
    let authenticator: Authenticator
    let metrics: ServerMetrics
    let limits: RealtimeLimits
    let logger: Logger
    /// What the bytes queued for slow readers count in, across the server.
    let outboundBudget: OutboundBudget
    /// One flush per event loop for the connections with frames waiting.
    let flushBatches: FlushBatches
    /// One heartbeat check per event loop for its realtime connections.
    let heartbeats: HeartbeatTimers
    /// The namespace of a client that names none.
    let defaultNamespace: String
    /// Whether the namespace is opened before the hello, so that a client of a namespace another
    /// process serves is sent there instead (cluster mode).
    let redirects: Bool
    /// The `host:port` the hello advertises to a client that connected to `requestHost`.
    let advertisedHost: @Sendable (_ requestHost: String?) -> String
    /// Which browser pages may use the admin credential.
    let adminOrigins: AdminOriginCheck

    init(
        databases: DatabaseRegistry, sessions: SessionRegistry, connections: OpenConnections,
        authenticator: Authenticator, metrics: ServerMetrics, limits: RealtimeLimits, logger: Logger,
        outboundBudget: OutboundBudget, flushBatches: FlushBatches, defaultNamespace: String, redirects: Bool,
        advertisedHost: @escaping @Sendable (_ requestHost: String?) -> String,
        adminOrigins: AdminOriginCheck = AdminOriginCheck()
    ) {
        self.databases = databases
        self.sessions = sessions
        self.connections = connections
        self.authenticator = authenticator
        self.metrics = metrics
        self.limits = limits
        self.logger = logger
        self.outboundBudget = outboundBudget
        self.flushBatches = flushBatches
        heartbeats = HeartbeatTimers(heartbeatInterval: limits.heartbeatInterval)
        self.defaultNamespace = defaultNamespace
        self.redirects = redirects
        self.advertisedHost = advertisedHost
        self.adminOrigins = adminOrigins
    }
}

/// The bounds one realtime connection is held to (see ``ServerConfiguration`` for each).
struct RealtimeLimits: Sendable {
    var maxMessageBytes: Int
    var maxPendingRequestBytes: Int
    var maxPendingOutboundBytes: Int
    var maxListensPerConnection: Int
    var maxOnDisconnectBytes: Int
    var heartbeatInterval: Duration

    init(_ configuration: ServerConfiguration) {
        maxMessageBytes = configuration.maxMessageBytes
        maxPendingRequestBytes = configuration.maxPendingRequestBytes
        maxPendingOutboundBytes = configuration.maxPendingOutboundBytes
        maxListensPerConnection = configuration.maxListensPerConnection
        maxOnDisconnectBytes = configuration.maxOnDisconnectBytes
        heartbeatInterval = configuration.heartbeatInterval
    }
}
