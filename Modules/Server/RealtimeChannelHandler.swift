import Logging
import NIOCore
import NIOWebSocket
import Presence
import Transport

/// Serves one upgraded realtime WebSocket on its event loop: joins split frames into messages for
/// its ``RealtimeConnection``, answers control frames, and runs the heartbeat.
///
/// The ``Heartbeat`` pings the peer every ``ServerConfiguration/heartbeatInterval``; a peer that
/// sent nothing (not even a pong) for two whole intervals is treated as gone and its connection
/// closed, which runs its onDisconnect writes.
final class RealtimeChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let server: CanopyServer
    private let parameters: [String: String]
    private var connection: RealtimeConnection?
    private var assembler: FrameAssembler
    private var heartbeat: Heartbeat
    private var heartbeatTask: RepeatedTask?

    init(server: CanopyServer, parameters: [String: String]) {
        self.server = server
        self.parameters = parameters
        self.assembler = FrameAssembler(maxMessageBytes: server.configuration.maxMessageBytes)
        self.heartbeat = Heartbeat(interval: server.configuration.heartbeatInterval)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self) else {
            context.close(promise: nil)
            return
        }
        let connection = RealtimeConnection(
            channel: context.channel, framedOutput: NIOLoopBound(encoder, eventLoop: context.eventLoop), server: server)
        self.connection = connection
        connection.open(parameters: parameters)
        let interval = TimeAmount(heartbeat.interval)
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        heartbeatTask = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            bound.value.handler.beat(context: bound.value.context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        heartbeatTask?.cancel()
        heartbeatTask = nil
    }

    private func beat(context: ChannelHandlerContext) {
        switch heartbeat.beat() {
        case .close:
            context.close(promise: nil)
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        heartbeat.heard()
        switch frame.opcode {
        case .text:
            receive(frame.unmaskedText, context: context)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
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
        guard let connection else { return }
        do {
            switch try assembler.append(frame) {
            case .message(let text)?: connection.receive(text)
            case .keepalive?, nil: break
            }
        } catch {
            connection.send(.error("\(error)"))
            connection.closeAfterPendingMessages()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            connection?.closeAfterPendingMessages(code: .goingAway)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        heartbeatTask?.cancel()
        heartbeatTask = nil
        connection?.channelClosed()
        connection = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        server.logger.debug("realtime connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
