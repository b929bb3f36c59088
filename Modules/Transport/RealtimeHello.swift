/// The server's greeting, control `h`: the first message on every connection.
///
/// ```swift
/// let client = try await RealtimeClient.connect(to: endpoint, logger: logger)
/// let offset = client.hello.timestamp - nowMilliseconds   // .info/serverTimeOffset
/// ```
public struct RealtimeHello: Sendable, Equatable {
    /// The server's clock, in milliseconds since 1970.
    public var timestamp: Int64
    /// The server's own `host:port`.
    public var host: String
    /// The session id, to name in `ls=` when reconnecting.
    public var sessionID: String
    /// The Canopy extensions the server supports (empty for other servers).
    public var extensions: Set<String>
    /// The protocol version the server speaks (`"5"`).
    public var version: String

    public init(
        timestamp: Int64, host: String, sessionID: String, extensions: Set<String> = [], version: String = "5"
    ) {
        self.timestamp = timestamp
        self.host = host
        self.sessionID = sessionID
        self.extensions = extensions
        self.version = version
    }

    /// The extension under which a server takes ``WriteID``s and applies a resent write once.
    public static let writeIDsExtension = "write-ids"

    /// Whether the server takes ``WriteID``s with writes.
    public var supportsWriteIDs: Bool { extensions.contains(Self.writeIDsExtension) }
}
