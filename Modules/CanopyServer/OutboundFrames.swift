import NIOCore
import Transport

/// A realtime message waiting to be written to one connection.
enum OutboundMessage: Sendable {
    /// Bytes already framed (a push, framed once for every connection it goes to).
    case frames(ByteBuffer)
    /// A message of this connection alone (an answer, a control message), framed when written.
    case message(ServerMessage)
}

/// Encodes a batch of realtime messages as server-to-client WebSocket text frames (unmasked, as
/// RFC 6455 requires of a server), for one flush.
///
/// Messages longer than ``FrameAssembler/maxFrameCharacters`` are split the way the realtime
/// protocol splits them: a frame with the count, then the pieces.
enum OutboundFrames {
    /// Framed bytes longer than this are written as they are, shared with every other connection
    /// they go to, instead of being copied into the batch's buffer.
    static let sharedFramesThreshold = 16 * 1024

    /// The batch as buffers to write in order: small messages together in one buffer, large
    /// framed pushes as their own (shared) buffers between them.
    static func encode(_ messages: [OutboundMessage], allocator: ByteBufferAllocator) -> [ByteBuffer] {
        var capacity = 0
        for message in messages {
            switch message {
            case .frames(let frames) where frames.readableBytes <= sharedFramesThreshold:
                capacity += frames.readableBytes
            case .frames: break
            case .message: capacity += 64
            }
        }
        var buffers: [ByteBuffer] = []
        var output = allocator.buffer(capacity: capacity)
        for message in messages {
            switch message {
            case .message(let message):
                if let number = message.plainAcknowledgementNumber {
                    let (prefix, suffix) = ServerMessage.plainAcknowledgement
                    let digits = String(number)
                    appendFrame(prefix.utf8.count + digits.utf8.count + suffix.utf8.count, to: &output)
                    output.writeString(prefix)
                    output.writeString(digits)
                    output.writeString(suffix)
                    continue
                }
                appendFrames(of: message.text, to: &output)
            case .frames(let frames):
                guard frames.readableBytes > sharedFramesThreshold else {
                    output.writeImmutableBuffer(frames)
                    continue
                }
                if output.readableBytes > 0 {
                    buffers.append(output)
                    output = allocator.buffer(capacity: 0)
                }
                buffers.append(frames)
            }
        }
        if output.readableBytes > 0 { buffers.append(output) }
        return buffers
    }

    /// `text` framed as the realtime protocol frames a message: one frame, or split frames when
    /// it is long.
    static func frames(of text: String, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var output = allocator.buffer(capacity: text.utf8.count + 10)
        appendFrames(of: text, to: &output)
        return output
    }

    /// Writes `text` as one frame, or as the realtime protocol's split frames when it is long.
    static func appendFrames(of text: String, to output: inout ByteBuffer) {
        if FrameAssembler.fitsOneFrame(text) {
            appendFrame(text.utf8.count, to: &output)
            output.writeString(text)
            return
        }
        for piece in FrameAssembler.frames(for: text) {
            appendFrame(piece.utf8.count, to: &output)
            output.writeString(piece)
        }
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
