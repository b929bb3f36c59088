import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import RealtimeClientSocket
import Transport

/// What one load connection does with the messages it receives. It runs on the connection's event
/// loop, so a session keeps plain mutable state and answers without any task switch: the load
/// generator must cost far less per message than the server it measures.
protocol LoadSession: AnyObject {
    /// One complete realtime message (the hello included). Writes go out at the end of the read.
    func received(_ message: String, output: inout LoadOutput)
    /// The connection closed (by either side).
    func closed()
}

/// Messages a session queues during one read; they are written with one flush.
struct LoadOutput {
    fileprivate(set) var messages: [String] = []
    fileprivate(set) var close = false
    fileprivate(set) var stopReading = false

    mutating func send(_ text: String) { messages.append(text) }
    mutating func closeConnection() { close = true }
    /// Stops reading the socket after this read (the messages queued are still sent): the server's
    /// later messages pile up in the kernel's buffers, then in the server, as with a stalled client.
    /// ``LoadConnection/setReading(_:)`` reads again.
    mutating func stopReadingSocket() { stopReading = true }
}

/// One realtime-protocol WebSocket connection of the load generator, on raw SwiftNIO.
final class LoadConnection: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `ws://host:port/uri` and hands every message to the session made by `makeSession`.
    ///
    /// The upgrade is done by hand (``ResponseHeadHandler``): NIO's HTTP client upgrade builds and then
    /// removes an HTTP codec per connection, which cost the load generator about as much CPU per
    /// reconnect as the server spent, and a storm of 10,000 reconnects would measure the tool.
    /// `receiveBufferSize` sets the socket's `SO_RCVBUF` before it connects (a small one makes a
    /// client that stops reading stall the server's writes sooner). With `authToken`, the connection
    /// sends it in an `auth` request once greeted and returns once it is accepted (the session sees
    /// the hello only then); a refused token throws ``LoadError/tokenRefused(server:status:reason:)``.
    static func connect(
        host: String, port: Int, uri: String, group: any EventLoopGroup, connectTimeout: TimeAmount = .seconds(10),
        receiveBufferSize: Int? = nil, authToken: String? = nil,
        makeSession: @escaping @Sendable () -> any LoadSession
    ) async throws -> LoadConnection {
        let bootstrap = Self.bootstrap(
            group: group, connectTimeout: connectTimeout, receiveBufferSize: receiveBufferSize)
        let request =
            "GET \(uri) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Self.randomKey())\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n"
        let server = "\(host):\(port)"
        let initializer: @Sendable (any Channel) -> EventLoopFuture<UpgradeResult> = { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgraded = channel.eventLoop.makePromise(of: Void.self)
                let authentication = authToken.map { token in
                    LoadAuthentication(token: token, server: server, accepted: channel.eventLoop.makePromise())
                }
                if let tls = LoadTLS.context {
                    let name = (try? SocketAddress(ipAddress: host, port: port)) == nil ? host : nil
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: name))
                }
                try channel.pipeline.syncOperations.addHandlers([
                    ResponseHeadHandler(request: request, expectedStatus: 101, headRead: upgraded),
                    ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 24)),
                    NIOWebSocketFrameAggregator(
                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16, maxAccumulatedFrameSize: 1 << 24),
                    LoadHandler(session: makeSession(), authentication: authentication),
                ])
                let ready = upgraded.futureResult.flatMapError { error in
                    channel.eventLoop.makeFailedFuture(UpgradeFailure(reason: "\(error)"))
                }
                guard let authentication else { return ready.map { channel } }
                return ready.flatMap { authentication.accepted.futureResult }.map { channel }
            }
        }
        let upgraded = try await Self.connect(bootstrap, host: host, port: port, channelInitializer: initializer)
        do {
            return LoadConnection(channel: try await upgraded.get())
        } catch let error as LoadError {
            throw error
        } catch let error as UpgradeFailure {
            throw LoadError.notUpgraded("\(LoadTLS.isEnabled ? "wss" : "ws")://\(host):\(port)\(uri) (\(error.reason))")
        } catch {
            throw LoadError.notUpgraded("\(LoadTLS.isEnabled ? "wss" : "ws")://\(host):\(port)\(uri) (\(error))")
        }
    }

    /// Why the server's answer to the upgrade request was not a `101`.
    private struct UpgradeFailure: Error {
        var reason: String
    }

    /// The channel, once the server answered the upgrade with 101.
    private typealias UpgradeResult = EventLoopFuture<any Channel>

    /// A TCP client bootstrap with `TCP_NODELAY`, and `SO_RCVBUF` when `receiveBufferSize` is given.
    static func bootstrap(
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
    /// A failure to connect throws ``LoadError/cannotConnect(address:reason:)``.
    static func connect<Output: Sendable>(
        _ bootstrap: ClientBootstrap, host: String, port: Int,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> Output {
        do {
            if let address = try? SocketAddress(ipAddress: host, port: port) {
                return try await bootstrap.connect(to: address, channelInitializer: channelInitializer)
            }
            return try await bootstrap.connect(host: host, port: port, channelInitializer: channelInitializer)
        } catch {
            throw LoadError.cannotConnect(address: "\(host):\(port)", reason: ConnectFailure.describe(error))
        }
    }

    /// A `Sec-WebSocket-Key`: 16 random bytes in base64.
    private static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// Sends one message from outside the event loop.
    func send(_ text: String) {
        let channel = channel
        channel.eventLoop.execute {
            var masks = WebSocketMaskKeys()
            channel.writeAndFlush(
                MaskedFrames.encode([text], allocator: channel.allocator, masks: &masks), promise: nil)
        }
    }

    func close() { channel.close(promise: nil) }

    /// Reads the socket again after ``LoadOutput/stopReadingSocket()`` (or stops reading it).
    func setReading(_ reading: Bool) async throws {
        try await channel.setOption(.autoRead, value: reading).get()
    }

    /// Cuts the connection at once, as a dropped network path would: no WebSocket close handshake,
    /// and a TCP reset (`SO_LINGER` 0) instead of an orderly close, so the server learns of it at once
    /// and no socket of this side lingers in TIME_WAIT.
    func abort() {
        let channel = channel
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// The client's half of an HTTP exchange of which only the response's head matters (the WebSocket
/// upgrade, an event stream): writes the request once connected, waits for the end of the
/// response's headers, checks the status line for `expectedStatus` (`101`, `200`), then passes every
/// later byte on (the server's first frames or events may arrive in the same read as its headers).
final class ResponseHeadHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: String
    private let expectedStatus: Int
    private let headRead: EventLoopPromise<Void>
    private var response: ByteBuffer?
    private var isDone = false

    /// `headRead` succeeds once the head with the expected status was read, and fails with
    /// ``LoadError/unexpectedResponse(_:)`` otherwise.
    init(request: String, expectedStatus: Int, headRead: EventLoopPromise<Void>) {
        self.request = request
        self.expectedStatus = expectedStatus
        self.headRead = headRead
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isDone else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        response.setOrWriteBuffer(&bytes)
        guard var response else { return }
        let view = response.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10] as [UInt8]) else {
            if response.readableBytes > 16384 { fail(context, "no end of headers in 16 KB") }
            return
        }
        let statusLine = String(
            decoding: view[view.startIndex..<(view.firstIndex(of: 13) ?? end.lowerBound)], as: UTF8.self)
        guard statusLine.hasPrefix("HTTP/1.1 \(expectedStatus)") else {
            fail(context, statusLine)
            return
        }
        isDone = true
        response.moveReaderIndex(to: end.upperBound)
        self.response = nil
        headRead.succeed(())
        if response.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(response)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failIfNotDone()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failIfNotDone()
    }

    private func failIfNotDone() {
        guard !isDone else { return }
        isDone = true
        headRead.fail(LoadError.unexpectedResponse("the connection closed before the response's head"))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isDone else {
            context.fireErrorCaught(error)
            return
        }
        fail(context, "\(error)")
    }

    private func fail(_ context: ChannelHandlerContext, _ reason: String) {
        isDone = true
        headRead.fail(LoadError.unexpectedResponse(reason))
        context.close(promise: nil)
    }
}

/// Joins frames into messages for the session, answers pings, writes what the session queued
/// (frames it encodes itself, ``MaskedFrames``, straight to the socket).
private final class LoadHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = ByteBuffer

    private let session: any LoadSession
    /// The credential to send once greeted, until the server accepted it; `nil` without one.
    private var authentication: LoadAuthentication?
    private var assembler = FrameAssembler()
    private var output = LoadOutput()
    private var writeScheduled = false
    /// Masking keys for this connection's frames; seeded from the system generator once, since
    /// asking the system for every frame's key costs more than the rest of the send.
    private var masks = WebSocketMaskKeys()

    init(session: any LoadSession, authentication: LoadAuthentication?) {
        self.session = session
        self.authentication = authentication
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            guard case .message(let text)? = try? assembler.append(String(buffer: frame.unmaskedData)) else { return }
            if authentication != nil {
                authenticate(text, context: context)
            } else {
                session.received(text, output: &output)
            }
            if output.stopReading {
                output.stopReading = false
                try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            }
            // Written at the end of this read, or by a task of this loop tick if no read-complete follows
            // (the first messages can arrive together with the upgrade response).
            if !writeScheduled, !output.messages.isEmpty || output.close {
                writeScheduled = true
                let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
                context.eventLoop.execute { bound.value.handler.writeOutput(context: bound.value.context) }
            }
        case .ping:
            var pong = context.channel.allocator.buffer(capacity: frame.length + 6)
            MaskedFrames.append(
                bytes: frame.unmaskedData, opcode: 0x8A, to: &pong, key: masks.next())
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        writeOutput(context: context)
        context.fireChannelReadComplete()
    }

    /// Before the credential is accepted: sends it once greeted, and hands the session the hello
    /// once the server accepted it; a refusal fails the connection.
    private func authenticate(_ text: String, context: ChannelHandlerContext) {
        guard var step = authentication else { return }
        switch step.received(text) {
        case .send(let request):
            output.send(request)
            authentication = step
        case .accepted(let hello):
            authentication = nil
            step.accepted.succeed(())
            session.received(hello, output: &output)
        case .refused(let error):
            authentication = nil
            step.accepted.fail(error)
            output.closeConnection()
        case .ignored:
            break
        }
    }

    private func writeOutput(context: ChannelHandlerContext) {
        writeScheduled = false
        guard !output.messages.isEmpty || output.close else { return }
        let frames = MaskedFrames.encode(output.messages, allocator: context.channel.allocator, masks: &masks)
        context.writeAndFlush(wrapOutboundOut(frames), promise: nil)
        output.messages.removeAll(keepingCapacity: true)
        if output.close { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAuthentication()
        session.closed()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAuthentication()
    }

    /// The connection ended before the server answered the credential.
    private func failAuthentication() {
        guard let authentication else { return }
        self.authentication = nil
        authentication.accepted.fail(
            LoadError.tokenRefused(
                server: authentication.server, status: "closed",
                reason: "the connection closed before the server answered the auth request"))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Client-to-server WebSocket text frames, masked as RFC 6455 requires of a client, encoded into
/// one buffer for one write (NIO's encoder writes each frame apart and masks byte by byte).
enum MaskedFrames {
    static func encode(
        _ messages: [String], allocator: ByteBufferAllocator, masks: inout WebSocketMaskKeys
    ) -> ByteBuffer {
        var output = allocator.buffer(capacity: messages.reduce(0) { $0 + $1.utf8.count + 14 })
        for message in messages {
            if FrameAssembler.fitsOneFrame(message) {
                append(message, to: &output, key: masks.next())
                continue
            }
            for piece in FrameAssembler.frames(for: message) {
                append(piece, to: &output, key: masks.next())
            }
        }
        return output
    }

    /// Appends one final, masked text frame holding `text`.
    static func append(_ text: String, to output: inout ByteBuffer, key: UInt32) {
        var text = text
        text.withUTF8 {
            WebSocketMasking.appendClientFrame(UnsafeRawBufferPointer($0), opcode: 0x81, key: key, to: &output)
        }
    }

    /// Appends one final, masked frame with `opcode` (first byte, FIN bit included) holding `bytes`.
    static func append(bytes: ByteBuffer, opcode: UInt8, to output: inout ByteBuffer, key: UInt32) {
        bytes.withUnsafeReadableBytes { WebSocketMasking.appendClientFrame($0, opcode: opcode, key: key, to: &output) }
    }
}

/// Helpers to read fields out of message texts without parsing them (a plain UTF-8 byte search:
/// `String.range(of:)` goes through Foundation and cost the load generator a tenth of its time).
enum MessageText {
    static func isHello(_ text: String) -> Bool { offset(after: #""t":"h""#, in: text) != nil }

    /// The request number of a response text (`{"t":"d","d":{"b":...,"r":N}}`).
    static func responseNumber(_ text: String) -> Int? {
        integer(after: #""r":"#, in: text).map { Int($0) }
    }

    /// The status of a response text (`ok`, or an error code such as `too_many_listens`): the string
    /// after the first `"s":"` (a response's data comes before its status, so it must not hold one).
    static func status(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            guard let start = offset(after: #""s":""#, in: bytes) else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// The integer after `marker` in `text` (used to carry send times inside pushed values).
    static func integer(after marker: String, in text: String) -> UInt64? {
        var text = text
        return text.withUTF8 { bytes -> UInt64? in
            guard var index = offset(after: marker, in: bytes) else { return nil }
            var number: UInt64 = 0
            var sawDigit = false
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                number = number * 10 + UInt64(bytes[index] - 48)
                sawDigit = true
                index += 1
            }
            return sawDigit ? number : nil
        }
    }

    private static func offset(after marker: String, in text: String) -> Int? {
        var text = text
        return text.withUTF8 { offset(after: marker, in: $0) }
    }

    /// The offset just past the first occurrence of `marker` in `bytes`.
    private static func offset(after marker: String, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var marker = marker
        return marker.withUTF8 { offset(after: $0, in: bytes) }
    }

    private static func offset(after pattern: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Int?
    {
        guard let first = pattern.first, bytes.count >= pattern.count else { return nil }
        var start = 0
        while start <= bytes.count - pattern.count {
            if bytes[start] == first {
                var matched = 1
                while matched < pattern.count, bytes[start + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return start + pattern.count }
            }
            start += 1
        }
        return nil
    }
}
