public import Logging
public import NIOSSL
public import Transport
import Tree

/// One realtime-protocol WebSocket connection to a server. Connect with
/// ``connect(to:lastSession:timeout:tlsConfiguration:keepaliveInterval:logger:)``, read
/// ``messages``, ``send(_:)`` requests, ``close()`` when done.
///
/// ```swift
/// let endpoint = try RealtimeEndpoint(url: "http://127.0.0.1:9000?ns=demo")
/// let client = try await RealtimeClient.connect(to: endpoint, logger: logger)
/// client.send(.request(ClientRequest(number: 1, action: .listen(path: "/a", query: nil, tag: nil, hash: nil))))
/// for await message in client.messages {
///     print(message)   // .overwrite(path: "a", …), then .response(number: 1, status: "ok", …)
/// }
/// print(client.endReason ?? .closed("?"))   // why the stream finished
/// ```
///
/// A connection is used once: after it ends, connect a new one (``ReconnectBackoff`` says when).
/// Releasing the client closes its connection.
public final class RealtimeClient: Sendable {
    /// The server's greeting, received before `connect` returned.
    public let hello: RealtimeHello
    /// Where this client is connected.
    public let endpoint: RealtimeEndpoint
    private let connection: RealtimeConnection

    private init(hello: RealtimeHello, endpoint: RealtimeEndpoint, connection: RealtimeConnection) {
        self.hello = hello
        self.endpoint = endpoint
        self.connection = connection
    }

    deinit {
        connection.close()
    }

    /// Connects to `endpoint` (naming `lastSession` in `ls=` if given) and waits for the hello.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait for the hello, connecting and upgrading included.
    ///   - tlsConfiguration: the TLS settings for a secure endpoint; `nil` uses the system's
    ///     trust roots and checks the host name (`TLSConfiguration.makeClientConfiguration()`).
    ///     Ignored for `ws://`.
    ///   - keepaliveInterval: a keepalive frame `"0"` is sent when nothing was sent for this long.
    /// - Throws: ``RealtimeClientError/connectFailed(_:)`` when the server cannot be reached or
    ///   does not upgrade (or its first message is not a hello), ``RealtimeClientError/certificateRefused(_:)``
    ///   when its TLS certificate is refused, ``RealtimeClientError/timedOut(_:)`` when no hello
    ///   came within `timeout`.
    public static func connect(
        to endpoint: RealtimeEndpoint, lastSession: String? = nil, timeout: Duration = .seconds(30),
        tlsConfiguration: TLSConfiguration? = nil, keepaliveInterval: Duration = .seconds(45), logger: Logger
    ) async throws(RealtimeClientError) -> RealtimeClient {
        try await connect(
            to: endpoint, lastSession: lastSession, timeout: timeout,
            tls: endpoint.secure ? (tlsConfiguration ?? .makeClientConfiguration()) : nil,
            trust: tlsConfiguration == nil ? .system : TLSTrust(kind: .custom), keepaliveInterval: keepaliveInterval,
            logger: logger)
    }

    /// Connects to `endpoint`, accepting the server certificates `trust` accepts on `wss://`, and
    /// waits for the hello.
    ///
    /// ```swift
    /// let trust = try TLSTrust.addingCertificateAuthorities(pemFile: "/etc/canopy/ca.pem")
    /// let client = try await RealtimeClient.connect(to: endpoint, trust: trust, logger: logger)
    /// ```
    ///
    /// - Throws: as ``connect(to:lastSession:timeout:tlsConfiguration:keepaliveInterval:logger:)``.
    public static func connect(
        to endpoint: RealtimeEndpoint, lastSession: String? = nil, timeout: Duration = .seconds(30),
        trust: TLSTrust, keepaliveInterval: Duration = .seconds(45), logger: Logger
    ) async throws(RealtimeClientError) -> RealtimeClient {
        let tls =
            endpoint.secure
            ? try await trust.clientConfiguration(host: endpoint.host, port: endpoint.port, timeout: timeout) : nil
        return try await connect(
            to: endpoint, lastSession: lastSession, timeout: timeout, tls: tls, trust: trust,
            keepaliveInterval: keepaliveInterval, logger: logger)
    }

    private static func connect(
        to endpoint: RealtimeEndpoint, lastSession: String?, timeout: Duration, tls: TLSConfiguration?,
        trust: TLSTrust, keepaliveInterval: Duration, logger: Logger
    ) async throws(RealtimeClientError) -> RealtimeClient {
        let connection = RealtimeConnection(
            endpoint: endpoint, lastSession: lastSession, keepaliveInterval: keepaliveInterval, logger: logger)
        connection.start(tlsConfiguration: tls, timeout: timeout) { error in
            trust.refusal(of: error, host: endpoint.host, port: endpoint.port)
        }
        let hello = try await connection.waitForHello(timeout: timeout)
        return RealtimeClient(hello: hello, endpoint: endpoint, connection: connection)
    }

    /// Every server message after the hello, assembled from frames (count frames and keepalives
    /// are handled inside), in order. The stream finishes when the connection ends, for any
    /// reason: the server closed it or shut down (control `s` is not passed on: see
    /// ``endReason``), a network error, ``close()``, or a malformed message (logged). It has one
    /// reader: iterate it from one task.
    public var messages: AsyncStream<ServerMessage> { connection.messages }

    /// Why the connection ended, once ``messages`` finished (`nil` before): for example
    /// `.closed("shutdown: going away")` after control `s`, `.closed("closed by the client")`.
    public var endReason: RealtimeClientError? { connection.endReason }

    /// Queues `message`, split into frames when longer than 16,384 characters. Never blocks;
    /// returns false (and drops the message) once the connection is ending or ended.
    ///
    /// ```swift
    /// client.send(.request(ClientRequest(number: 2, action: .put(path: "/a", data: 1, hash: nil))))
    /// ```
    @discardableResult
    public func send(_ message: ClientMessage) -> Bool {
        connection.send(message.json.serialized())
    }

    /// Closes with a WebSocket close handshake; ``messages`` finishes once the server answered
    /// (or after 5 s), and ``endReason`` is `.closed("closed by the client")`.
    public func close() {
        connection.close()
    }
}
