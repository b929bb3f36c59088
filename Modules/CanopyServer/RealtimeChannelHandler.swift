import Logging
import NIOCore
import NIOWebSocket
import Presence
import Transport

/// Serves one upgraded realtime WebSocket on its event loop: joins split frames into messages for
/// its ``RealtimeSession``, answers control frames, and runs the heartbeat.
///
/// The ``Heartbeat`` pings the peer every ``ServerConfiguration/heartbeatInterval``; a peer that
/// sent nothing (not even a pong) for two intervals is treated as gone and its connection closed,
/// which runs its onDisconnect writes. A socket the peer closed or reset ends the connection at
/// once. A peer that breaks RFC 6455 (see ``WebSocketViolation``) is sent a close frame with the
/// matching code, and nothing it sent after the violation is handled.
final class RealtimeChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private let realtime: RealtimeContext
    /// What the session is opened with, dropped once it was: an idle connection keeps none of it.
    private var opening: Opening?
    private var session: RealtimeSession?
    /// The session's connection (while the channel is active).
    private var connection: RealtimeConnection? { session?.connection }
    private var reader: WebSocketFrameReader
    private var fragments: WebSocketFragments
    private var assembler: FrameAssembler
    private var heartbeat: Heartbeat
    /// Checks the heartbeat, with the other connections of the event loop, while the channel is open.
    private var heartbeatTimer: HeartbeatTimer?
    /// The heartbeat's times count from here.
    private let opened = NIODeadline.now()
    /// Set once the connection is being failed: later frames are dropped.
    private var failed = false

    /// A class, so that the handler holds a reference, not room for all of it, after the opening.
    private final class Opening {
        let parameters: [String: String]
        /// The upgrade request's `Host`.
        let requestHost: String?
        /// Who the client is, for the log.
        let origin: ClientOrigin
        /// What the client said of itself, for the console and the admin origin check.
        let client: RealtimeClientInfo

        init(parameters: [String: String], requestHost: String?, origin: ClientOrigin, client: RealtimeClientInfo) {
            self.parameters = parameters
            self.requestHost = requestHost
            self.origin = origin
            self.client = client
        }
    }

    init(
        context: RealtimeContext, parameters: [String: String], requestHost: String?, origin: ClientOrigin,
        client: RealtimeClientInfo = RealtimeClientInfo(), maxFrameBytes: Int
    ) {
        self.realtime = context
        reader = WebSocketFrameReader(maxFrameBytes: maxFrameBytes)
        fragments = WebSocketFragments(maxMessageBytes: maxFrameBytes)
        opening = Opening(parameters: parameters, requestHost: requestHost, origin: origin, client: client)
        self.assembler = FrameAssembler(maxMessageBytes: context.limits.maxMessageBytes)
        self.heartbeat = Heartbeat(interval: context.limits.heartbeatInterval)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self) else {
            context.close(promise: nil)
            return
        }
        guard let opening else { return }
        self.opening = nil
        let session = RealtimeSession(
            channel: context.channel, framedOutput: NIOLoopBound(encoder, eventLoop: context.eventLoop),
            context: realtime, client: opening.client)
        self.session = session
        session.open(parameters: opening.parameters, requestHost: opening.requestHost, origin: opening.origin)
        let timer = realtime.heartbeats.timer(for: context.eventLoop)
        timer.add(self, context: context)
        heartbeatTimer = timer
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopHeartbeat()
    }

    private func stopHeartbeat() {
        heartbeatTimer?.remove(self)
        heartbeatTimer = nil
    }

    /// The time since the connection opened, as the heartbeat counts it.
    private var elapsed: Duration { .nanoseconds((NIODeadline.now() - opened).nanoseconds) }

    /// Pings the peer, or closes a silent one, as ``Heartbeat`` says (every check interval, from its
    /// event loop's ``HeartbeatTimer``).
    func checkHeartbeat(context: ChannelHandlerContext) {
        // While the server does not read (its request queue is full), the peer's silence is ours.
        if (try? context.channel.syncOptions?.getOption(.autoRead)) == false { heartbeat.heard(at: elapsed) }
        switch heartbeat.check(at: elapsed) {
        case .close?:
            context.close(promise: nil)
        case .ping?:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())), promise: nil)
        case nil:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        reader.append(unwrapInboundIn(data))
        while !failed {
            do throws(WebSocketFrameReader.Refusal) {
                guard let frame = try reader.next() else { return }
                read(frame, context: context)
            } catch {
                realtime.logger.debug("failing a realtime connection", metadata: ["violation": "\(error)"])
                fail(code: error.closeCode, context: context)
            }
        }
    }

    private func read(_ fragment: InboundFrame, context: ChannelHandlerContext) {
        let frame: InboundFrame
        do {
            guard let whole = try fragments.take(fragment, allocator: context.channel.allocator) else { return }
            frame = whole
        } catch {
            realtime.logger.debug("failing a realtime connection", metadata: ["fragments": "\(error)"])
            fail(code: Self.closeCode(for: error), context: context)
            return
        }
        heartbeat.heard(at: elapsed)
        switch frame.opcode {
        case .text:
            // After the server's close frame nothing more is handled; the peer's close ends it.
            if connection?.hasSentClose == true { return }
            guard let text = frame.unmaskedText else {
                fail(.invalidUTF8, context: context)
                return
            }
            receive(text, context: context)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            if connection?.hasSentClose == true {
                context.close(promise: nil)
                return
            }
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            var answer = context.channel.allocator.buffer(capacity: 2)
            answer.write(webSocketErrorCode: code)
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: answer)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    private func receive(_ frame: String, context: ChannelHandlerContext) {
        guard let session else { return }
        do {
            switch try assembler.append(frame) {
            case .message(let text)?: session.receive(text)
            case .keepalive?, nil: break
            }
        } catch {
            session.connection.send(.error("\(error)"))
            session.connection.closeAfterPendingMessages()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            connection?.closeAfterPendingMessages(code: .goingAway)
        case let channelEvent as ChannelEvent where channelEvent == .inputClosed:
            // The server's channels allow half-closure (for HTTP), so a peer's FIN arrives here
            // rather than closing the channel. A WebSocket peer that stopped sending without a
            // close frame is gone (an app killed by its kernel): end the connection now, not
            // when the heartbeat notices.
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { connection?.measureQueued() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopHeartbeat()
        session?.channelClosed()
        session = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        realtime.logger.debug("realtime connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func fail(_ violation: WebSocketViolation, context: ChannelHandlerContext) {
        realtime.logger.debug("failing a realtime connection", metadata: ["violation": "\(violation)"])
        fail(code: violation.closeCode, context: context)
    }

    /// Sends what is queued, then a close frame with `code`, then closes the socket; later frames
    /// are dropped.
    private func fail(code: WebSocketErrorCode, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        if let connection {
            connection.closeAfterPendingMessages(code: code, awaitingPeer: false)
        } else {
            context.close(promise: nil)
        }
    }

    private static func closeCode(for error: NIOWebSocketFrameAggregator.Error) -> WebSocketErrorCode {
        switch error {
        case .accumulatedFrameSizeIsTooLarge, .tooManyFragments: .messageTooLarge
        case .nonFinalFragmentSizeIsTooSmall, .receivedNewFrameWithoutFinishingPrevious,
            .didReceiveFragmentBeforeReceivingTextOrBinaryFrame:
            .protocolError
        }
    }
}
