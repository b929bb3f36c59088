import Logging

/// What a ``RealtimeSession`` needs of the server, handed to it when it is made: the namespaces,
/// the sessions and connections open, credentials, metrics, limits, and where clients are sent.
struct RealtimeContext: Sendable {
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
    /// The namespace of a client that names none.
    let defaultNamespace: String
    /// Whether the namespace is opened before the hello, so that a client of a namespace another
    /// process serves is sent there instead (cluster mode).
    let redirects: Bool
    /// The `host:port` the hello advertises to a client that connected to `requestHost`.
    let advertisedHost: @Sendable (_ requestHost: String?) -> String
    /// Which browser pages may use the admin credential.
    var adminOrigins = AdminOriginCheck()
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
