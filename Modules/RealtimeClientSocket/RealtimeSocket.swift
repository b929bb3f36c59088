import Crypto
import Foundation
public import NIOCore
public import NIOPosix
public import NIOSSL
import NIOWebSocket
public import Transport
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One client WebSocket connection speaking the realtime protocol's frames, on raw SwiftNIO: the
/// client socket under the SDK's ``RealtimeClient``, the tests' client, canopy-load and the
/// benchmarks.
///
/// What arrives goes, on the connection's event loop, to a ``RealtimeSocketDelegate``; what it
/// queues is masked and written in one write per read. The socket answers pings, completes close
/// handshakes, and leaves the protocol's meaning (hello, requests, keepalives) to its users.
///
/// ```swift
/// let socket = try await RealtimeSocket.connect(host: "127.0.0.1", port: 9000, target: "/.ws?v=5&ns=demo") {
///     Echo()
/// }
/// socket.send(ClientMessage.ping)
/// socket.close()
/// ```
///
/// The upgrade is written by hand (``ResponseHeadHandler``): NIO's HTTP client upgrade builds and
/// then removes an HTTP codec per connection, which cost a load generator about as much CPU per
/// reconnect as the server spent.
public final class RealtimeSocket: Sendable {
    /// The connection's channel (its event loop runs the delegate).
    public let channel: any Channel
    private let handler: NIOLoopBound<RealtimeSocketHandler>

    private init(channel: any Channel, handler: NIOLoopBound<RealtimeSocketHandler>) {
        self.channel = channel
        self.handler = handler
    }

    /// Settings of a connection; the defaults suit a client of one server.
    public struct Configuration: Sendable {
        /// How long the TCP connection may take.
        public var connectTimeout: TimeAmount = .seconds(10)
        /// The socket's `SO_RCVBUF`, set before it connects (a small one makes a client that stops
        /// reading stall the server's writes sooner); `nil` keeps the system's default.
        public var receiveBufferSize: Int?
        /// The largest frame, and the largest message of fragments, read.
        public var maxFrameSize = 1 << 24
        /// How long a close handshake may take before the socket is closed anyway.
        public var closeTimeout: TimeAmount = .seconds(5)
        /// How long the server may take to answer the upgrade once connected; `nil` waits as long
        /// as it keeps the connection open.
        public var upgradeTimeout: TimeAmount?
        /// The IP address the socket is bound to before it connects (its port picked by the system);
        /// `nil` lets the system choose. A load generator spreads connections over several loopback
        /// addresses this way, as each gives one server address and port its own ephemeral ports.
        public var localAddress: String?

        public init() {}
    }

    /// Connects to `host:port` (over TLS when `tls` is given, naming `host` in SNI unless it is an
    /// IP address), upgrades the connection at `target` (`/.ws?v=5&ns=demo`), and hands every frame
    /// to the delegate `makeDelegate` makes. Returns once upgraded, and once the delegate's
    /// ``RealtimeSocketDelegate/holdsConnect(until:)`` held it back, once the delegate is ready.
    ///
    /// - Throws: ``RealtimeSocketError/cannotConnect(address:cause:)`` when no TCP connection could
    ///   be made, ``RealtimeSocketError/notUpgraded(url:cause:)`` when the server did not upgrade
    ///   (the TLS handshake failed, another status, a wrong `Sec-WebSocket-Accept`),
    ///   ``RealtimeSocketError/endedBeforeReady(url:reason:)`` when the connection ended while the
    ///   delegate held it back, or the error the delegate failed its `ready` promise with.
    public static func connect(
        host: String, port: Int, target: String, tls: NIOSSLContext? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        configuration: Configuration = Configuration(),
        delegate makeDelegate: @escaping @Sendable () -> any RealtimeSocketDelegate
    ) async throws -> RealtimeSocket {
        var bootstrap = Self.bootstrap(
            group: group, connectTimeout: configuration.connectTimeout,
            receiveBufferSize: configuration.receiveBufferSize)
        if let localAddress = configuration.localAddress {
            do {
                bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0))
            } catch {
                throw RealtimeSocketError.cannotConnect(address: "\(host):\(port)", cause: error)
            }
        }
        let authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        let url = "\(tls == nil ? "ws" : "wss")://\(authority)\(target)"
        let key = Self.randomKey()
        let request =
            "GET \(target) HTTP/1.1\r\nHost: \(authority)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n"
        let accept = Self.acceptValue(for: key)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<RealtimeSocket>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgraded = channel.eventLoop.makePromise(of: Void.self)
                if let tls {
                    let name = (try? SocketAddress(ipAddress: host, port: port)) == nil ? host : nil
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: name))
                }
                let ready = channel.eventLoop.makePromise(of: Void.self)
                let delegate = makeDelegate()
                let handler = RealtimeSocketHandler(
                    delegate: delegate, ready: ready, url: url, closeTimeout: configuration.closeTimeout)
                try channel.pipeline.syncOperations.addHandlers([
                    ResponseHeadHandler(
                        request: request, expectedStatus: 101, requiredHeader: ("Sec-WebSocket-Accept", accept),
                        timeout: configuration.upgradeTimeout, headRead: upgraded),
                    ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: configuration.maxFrameSize)),
                    NIOWebSocketFrameAggregator(
                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16,
                        maxAccumulatedFrameSize: configuration.maxFrameSize),
                    handler,
                ])
                let socket = RealtimeSocket(
                    channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
                // Run as the head is read, before the frames after it are passed on.
                let opened = NIOLoopBound(delegate, eventLoop: channel.eventLoop)
                upgraded.futureResult.whenSuccess { opened.value.opened(socket) }
                let waitsForReady = delegate.holdsConnect(until: ready)
                return upgraded.futureResult
                    .flatMapError {
                        channel.eventLoop.makeFailedFuture(RealtimeSocketError.notUpgraded(url: url, cause: $0))
                    }
                    .flatMap {
                        guard waitsForReady else {
                            ready.succeed()
                            return channel.eventLoop.makeSucceededVoidFuture()
                        }
                        return ready.futureResult
                    }
                    .map { socket }
                    .flatMapError { error in
                        // A connect that throws leaves no connection open.
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(error)
                    }
            }
        }
        let opened = try await Self.connect(bootstrap, host: host, port: port, channelInitializer: initializer)
        return try await opened.get()
    }

    /// Connects to a `ws://` or `wss://` URL (`ws://127.0.0.1:9000/.ws?v=5&ns=demo`), as
    /// ``connect(host:port:target:tls:group:configuration:delegate:)`` does; `wss://` uses `tls`,
    /// or the system's trust roots when it is `nil`.
    ///
    /// - Throws: ``RealtimeSocketError/invalidURL(_:reason:)`` for a URL that is not `ws[s]://`,
    ///   or as the connect it calls.
    public static func connect(
        url: String, tls: NIOSSLContext? = nil, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        configuration: Configuration = Configuration(),
        delegate makeDelegate: @escaping @Sendable () -> any RealtimeSocketDelegate
    ) async throws -> RealtimeSocket {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "ws" || scheme == "wss"
        else { throw RealtimeSocketError.invalidURL(url, reason: "not a ws:// or wss:// URL") }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw RealtimeSocketError.invalidURL(url, reason: "no host") }
        let secure = scheme == "wss"
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        var context = tls
        if secure, context == nil {
            do {
                context = try NIOSSLContext(configuration: .makeClientConfiguration())
            } catch {
                throw RealtimeSocketError.notUpgraded(url: url, cause: error)
            }
        }
        return try await connect(
            host: host, port: components.port ?? (secure ? 443 : 80), target: target, tls: secure ? context : nil,
            group: group, configuration: configuration, delegate: makeDelegate)
    }

    // MARK: Connecting

    /// A TCP client bootstrap with `TCP_NODELAY`, and `SO_RCVBUF` when `receiveBufferSize` is given.
    public static func bootstrap(
        group: any EventLoopGroup, connectTimeout: TimeAmount = .seconds(10), receiveBufferSize: Int? = nil
    ) -> ClientBootstrap {
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
        guard let receiveBufferSize else { return bootstrap }
        return bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBufferSize))
    }

    /// Connects `bootstrap` to `host:port`. An IP address is connected to directly: resolving it
    /// (getaddrinfo on a thread, then Happy Eyeballs) cost more than the rest of a connection's setup.
    ///
    /// - Throws: ``RealtimeSocketError/cannotConnect(address:cause:)``.
    public static func connect<Output: Sendable>(
        _ bootstrap: ClientBootstrap, host: String, port: Int,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws(RealtimeSocketError) -> Output {
        do {
            if let address = try? SocketAddress(ipAddress: host, port: port) {
                return try await bootstrap.connect(to: address, channelInitializer: channelInitializer)
            }
            return try await bootstrap.connect(host: host, port: port, channelInitializer: channelInitializer)
        } catch {
            throw .cannotConnect(address: "\(host.contains(":") ? "[\(host)]" : host):\(port)", cause: error)
        }
    }

    /// A `Sec-WebSocket-Key`: 16 random bytes in base64.
    private static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// The `Sec-WebSocket-Accept` a server answers `key` with (RFC 6455, section 4.2.2).
    static func acceptValue(for key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
            .base64EncodedString()
    }

    // MARK: Sending

    /// Sends one message (split into frames when longer than a frame holds), from any thread.
    public func send(_ text: String) {
        let handler = handler
        channel.eventLoop.execute { handler.value.write([text], promise: nil) }
    }

    /// Sends `message`, from any thread.
    public func send(_ message: ClientMessage) {
        send(message.json.serialized())
    }

    /// Sends text frames exactly as given, back to back in one write (to split a message by hand,
    /// or send what a well-behaved client would not); the future succeeds once they are written.
    @discardableResult
    public func send(frames: [String]) -> EventLoopFuture<Void> {
        let handler = handler
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.eventLoop.execute { handler.value.write(frames: frames, promise: promise) }
        return promise.futureResult
    }

    // MARK: Reading and ending

    /// Reads the socket again after ``RealtimeSocketOutput/stopReadingSocket()``, or stops reading
    /// it: the server's pings then go unanswered, as with a peer whose network dropped.
    public func setReading(_ reading: Bool) async throws {
        try await channel.setOption(.autoRead, value: reading).get()
    }

    /// Starts a close handshake: the connection ends once the server answered it, or after the
    /// configuration's `closeTimeout`.
    public func close() {
        let handler = handler
        channel.eventLoop.execute { handler.value.startClosing() }
    }

    /// Closes the TCP connection without a close handshake.
    public func closeWithoutHandshake() {
        let (channel, handler) = (channel, handler)
        channel.eventLoop.execute {
            handler.value.closingByClient()
            channel.close(promise: nil)
        }
    }

    /// Cuts the connection at once, as a dropped network path would: no close handshake, and a
    /// TCP reset (`SO_LINGER` 0) instead of an orderly close, so the server learns of it at once
    /// and no socket of this side lingers in TIME_WAIT.
    public func abort() {
        let (channel, handler) = (channel, handler)
        channel.eventLoop.execute { handler.value.closingByClient() }
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Succeeds once the connection has ended.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}

/// Why a ``RealtimeSocket`` could not connect.
public enum RealtimeSocketError: Error, CustomStringConvertible {
    /// The URL is not one a realtime socket connects to, and why.
    case invalidURL(String, reason: String)
    /// No TCP connection to `address` (`host:port`) could be made: refused, not resolved, timed out.
    case cannotConnect(address: String, cause: any Error)
    /// The connection was made, but the server at `url` did not upgrade it to a WebSocket: the TLS
    /// handshake failed, or the response (``ResponseHeadError``) was not the upgrade.
    case notUpgraded(url: String, cause: any Error)
    /// The connection to `url` ended while its delegate held the connect back.
    case endedBeforeReady(url: String, reason: RealtimeSocketCloseReason)

    public var description: String {
        switch self {
        case .endedBeforeReady(let url, let reason): "the connection to \(url) ended before it was ready: \(reason)"
        case .invalidURL(let url, let reason): "invalid WebSocket URL \"\(url)\": \(reason)"
        case .cannotConnect(let address, let cause): "cannot connect to \(address): \(cause)"
        case .notUpgraded(let url, let cause): "\(url) did not accept the WebSocket upgrade: \(cause)"
        }
    }
}
