import NIOCore
import NIOWebSocket

/// Reads a client's WebSocket frames from the bytes of its socket, in the connection's own handler:
/// an idle connection keeps no decoder, validator or error handler of its own (NIO's
/// `WebSocketFrameDecoder` in a `ByteToMessageHandler`, and their pipeline contexts), and no bytes
/// once every frame read was whole.
///
/// It refuses what NIO's decoder refuses (a frame longer than `maxFrameBytes`, a fragmented or long
/// control frame: ``Refusal/frame(_:)``) and what RFC 6455 forbids that NIO lets through
/// (``WebSocketViolation``: a reserved opcode or bit, an unmasked frame), each as soon as the header
/// bytes that show it arrived.
struct WebSocketFrameReader {
    enum Refusal: Error {
        case frame(NIOWebSocketError)
        case violation(WebSocketViolation)

        /// The close code the connection is failed with.
        var closeCode: WebSocketErrorCode {
            switch self {
            case .frame(.invalidFrameLength): .messageTooLarge
            case .frame: .protocolError
            case .violation(let violation): violation.closeCode
            }
        }
    }

    let maxFrameBytes: Int
    /// The bytes not read as frames yet: the socket's last read while its frames are read, then the
    /// start of a frame not yet whole, in a buffer of the reader's own.
    private var pending: ByteBuffer?
    /// Whether `pending` is the reader's own buffer, which later reads are added to.
    private var pendingIsOwn = false

    init(maxFrameBytes: Int) { self.maxFrameBytes = maxFrameBytes }

    /// Adds bytes read from the socket.
    mutating func append(_ bytes: ByteBuffer) {
        var bytes = bytes
        if pending == nil {
            pending = bytes
            pendingIsOwn = false
        } else if pendingIsOwn {
            pending?.writeBuffer(&bytes)
        } else {
            var own = ByteBuffer()
            own.reserveCapacity((pending?.readableBytes ?? 0) + bytes.readableBytes)
            if var read = pending { own.writeBuffer(&read) }
            own.writeBuffer(&bytes)
            pending = own
            pendingIsOwn = true
        }
    }

    /// The next whole frame, or `nil` until more bytes arrive.
    mutating func next() throws(Refusal) -> InboundFrame? {
        guard var buffer = pending else { return nil }
        pending = nil
        let frame = try Self.frame(from: &buffer, maxFrameBytes: maxFrameBytes)
        guard buffer.readableBytes > 0 else {
            pendingIsOwn = false
            return frame
        }
        if frame != nil {
            pending = buffer
        } else if pendingIsOwn {
            // Later reads are added behind the frame's start; what came before it goes.
            buffer.discardReadBytes()
            pending = buffer
        } else {
            // Copied out of the socket's receive buffer, which the channel reuses for its next read
            // only when no one else holds it.
            var own = ByteBuffer()
            own.reserveCapacity(buffer.readableBytes)
            own.writeBuffer(&buffer)
            pending = own
            pendingIsOwn = true
        }
        return frame
    }

    /// Reads one frame from `buffer`, leaving its reader index after it; `nil`, reading nothing,
    /// when the frame is not whole yet.
    private static func frame(
        from buffer: inout ByteBuffer, maxFrameBytes: Int
    ) throws(Refusal) -> InboundFrame? {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self) else { return nil }
        if let violation = WebSocketViolation.inFirstByte(first) { throw .violation(violation) }
        guard let second = buffer.getInteger(at: start + 1, as: UInt8.self) else { return nil }
        guard second & 0x80 != 0 else { throw .violation(.unmaskedFrame) }
        var offset = start + 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard let word = buffer.getInteger(at: offset, as: UInt16.self) else { return nil }
            length = UInt64(word)
            offset += 2
        } else if length == 127 {
            guard let word = buffer.getInteger(at: offset, as: UInt64.self) else { return nil }
            length = word
            offset += 8
        }
        // In the order NIO's decoder checks them.
        guard length <= UInt64(maxFrameBytes) else { throw .frame(.invalidFrameLength) }
        let isControl = first & 0x08 != 0
        let isFinal = first & 0x80 != 0
        if isControl, !isFinal { throw .frame(.fragmentedControlFrame) }
        if isControl, length > 125 { throw .frame(.multiByteControlFrameLength) }
        guard let mask = buffer.getInteger(at: offset, as: UInt32.self),
            let data = buffer.getSlice(at: offset + 4, length: Int(length)),
            let opcode = WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F)
        else { return nil }
        buffer.moveReaderIndex(to: offset + 4 + Int(length))
        // RSV bits were refused above (`WebSocketViolation.inFirstByte`): no extension is offered.
        let key = (
            UInt8(truncatingIfNeeded: mask >> 24), UInt8(truncatingIfNeeded: mask >> 16),
            UInt8(truncatingIfNeeded: mask >> 8), UInt8(truncatingIfNeeded: mask)
        )
        return InboundFrame(fin: isFinal, opcode: opcode, maskKey: key, data: data)
    }
}
