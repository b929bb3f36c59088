import NIOCore
import NIOWebSocket

/// Fails a realtime WebSocket on frames RFC 6455 forbids and NIO's `WebSocketFrameDecoder` lets
/// through (it leaves them to extensions, and Canopy negotiates none): reserved opcodes, reserved
/// bits, and client frames without a mask.
///
/// It reads the raw bytes before the decoder, following the frame headers, so a frame is judged as
/// soon as its first two bytes arrived rather than once the whole frame did (a peer that sent one
/// bad byte would otherwise be kept until the heartbeat). A bad frame is not passed on; it is
/// reported with `fireErrorCaught` as a ``WebSocketViolation`` and every later byte is dropped,
/// so that the ``RealtimeChannelHandler`` fails the connection with the violation's close code.
final class WebSocketFrameValidator: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        case firstByte
        case lengthByte
        case extendedLength(remainingBytes: Int, length: UInt64)
        case maskingKey(remainingBytes: Int, length: UInt64)
        case payload(remaining: UInt64)
        case failed
    }

    private var state = State.firstByte

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        var index = buffer.readerIndex
        while index < buffer.writerIndex {
            switch state {
            case .failed:
                return
            case .payload(let remaining):
                let taken = min(remaining, UInt64(buffer.writerIndex - index))
                index += Int(taken)
                state = taken < remaining ? .payload(remaining: remaining - taken) : .firstByte
            default:
                guard let byte = buffer.getInteger(at: index, as: UInt8.self) else { return }
                if let violation = step(byte) {
                    state = .failed
                    if let before = buffer.readSlice(length: index - buffer.readerIndex), before.readableBytes > 0 {
                        context.fireChannelRead(wrapInboundOut(before))
                    }
                    context.fireErrorCaught(violation)
                    return
                }
                index += 1
            }
        }
        context.fireChannelRead(data)
    }

    private func step(_ byte: UInt8) -> WebSocketViolation? {
        switch state {
        case .firstByte:
            if let violation = Self.violation(inFirstByte: byte) { return violation }
            state = .lengthByte
        case .lengthByte:
            guard byte & 0x80 != 0 else { return .unmaskedFrame }
            switch byte & 0x7F {
            case 126: state = .extendedLength(remainingBytes: 2, length: 0)
            case 127: state = .extendedLength(remainingBytes: 8, length: 0)
            case let length: state = .maskingKey(remainingBytes: 4, length: UInt64(length))
            }
        case .extendedLength(let remainingBytes, let length):
            let length = length << 8 | UInt64(byte)
            state =
                remainingBytes > 1
                ? .extendedLength(remainingBytes: remainingBytes - 1, length: length)
                : .maskingKey(remainingBytes: 4, length: length)
        case .maskingKey(let remainingBytes, let length):
            if remainingBytes > 1 {
                state = .maskingKey(remainingBytes: remainingBytes - 1, length: length)
            } else {
                state = length > 0 ? .payload(remaining: length) : .firstByte
            }
        case .payload, .failed:
            break
        }
        return nil
    }

    /// What is wrong with a frame whose first byte is `byte` (FIN, RSV1–3, opcode), if anything.
    static func violation(inFirstByte byte: UInt8) -> WebSocketViolation? {
        let opcode = byte & 0x0F
        switch opcode {
        case 0x0, 0x1, 0x2, 0x8, 0x9, 0xA: break
        default: return .reservedOpcode(opcode)
        }
        if byte & 0x70 != 0 { return .reservedBitsSet }
        return nil
    }
}
