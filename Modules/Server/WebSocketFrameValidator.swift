import NIOCore
import NIOWebSocket

/// Fails a realtime WebSocket on frames RFC 6455 forbids and NIO's `WebSocketFrameDecoder` lets
/// through (it leaves them to extensions, and Canopy negotiates none): reserved opcodes, reserved
/// bits, and client frames without a mask.
///
/// It sits between the decoder and `NIOWebSocketFrameAggregator`, which drops the reserved bits
/// and masks of the fragments it joins. A bad frame is not passed on; it is reported with
/// `fireErrorCaught` as a ``WebSocketViolation`` and every later frame is dropped, so that the
/// ``RealtimeChannelHandler`` fails the connection with the violation's close code.
final class WebSocketFrameValidator: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        if let violation = Self.violation(in: unwrapInboundIn(data)) {
            failed = true
            context.fireErrorCaught(violation)
            return
        }
        context.fireChannelRead(data)
    }

    /// What is wrong with a frame a client sent, if anything.
    static func violation(in frame: WebSocketFrame) -> WebSocketViolation? {
        switch frame.opcode {
        case .continuation, .text, .binary, .connectionClose, .ping, .pong: break
        default: return .reservedOpcode(UInt8(webSocketOpcode: frame.opcode))
        }
        if frame.rsv1 || frame.rsv2 || frame.rsv3 { return .reservedBitsSet }
        if frame.maskKey == nil { return .unmaskedFrame }
        return nil
    }
}
