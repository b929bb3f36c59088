import NIOCore
import Transport

/// A realtime message waiting to be written to one connection.
enum OutboundMessage: Sendable {
    /// Encoded message text (a shared push, or any other message).
    case text(ByteBuffer)
    /// The plain acknowledgement of request `number`, spelled when written.
    case ok(Int)
}

/// Encodes a batch of realtime messages as server-to-client WebSocket text frames (unmasked, as
/// RFC 6455 requires of a server) into one buffer, for one write and one flush.
///
/// Messages longer than ``FrameAssembler/maxFrameCharacters`` are split the way the realtime
/// protocol splits them: a frame with the count, then the pieces.
enum OutboundFrames {
    static func encode(_ messages: [OutboundMessage], allocator: ByteBufferAllocator) -> ByteBuffer {
        var capacity = 0
        for message in messages {
            switch message {
            case .text(let text): capacity += text.readableBytes + 10
            case .ok: capacity += 64
            }
        }
        var output = allocator.buffer(capacity: capacity)
        for message in messages {
            switch message {
            case .ok(let number):
                let text = #"{"d":{"b":{"d":"","s":"ok"},"r":"# + String(number) + #"},"t":"d"}"#
                appendFrame(text.utf8.count, to: &output)
                output.writeString(text)
            case .text(let text):
                guard text.readableBytes > FrameAssembler.maxFrameCharacters else {
                    appendFrame(text.readableBytes, to: &output)
                    output.writeImmutableBuffer(text)
                    continue
                }
                for piece in FrameAssembler.frames(for: String(buffer: text)) {
                    appendFrame(piece.utf8.count, to: &output)
                    output.writeString(piece)
                }
            }
        }
        return output
    }

    /// Writes the header of a final, unmasked text frame with a payload of `length` bytes.
    static func appendFrame(_ length: Int, to output: inout ByteBuffer) {
        output.writeInteger(UInt8(0x81))
        switch length {
        case ..<126:
            output.writeInteger(UInt8(length))
        case ..<65536:
            output.writeInteger(UInt8(126))
            output.writeInteger(UInt16(length))
        default:
            output.writeInteger(UInt8(127))
            output.writeInteger(UInt64(length))
        }
    }
}
