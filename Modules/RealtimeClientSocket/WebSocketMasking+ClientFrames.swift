public import NIOCore
public import Transport

extension WebSocketMasking {
    /// Appends one final frame as a client sends it (RFC 6455, section 5.2): `opcode` (the first
    /// byte, FIN bit included), the length, `key`, and `payload` masked with `key`. Writing many
    /// frames into one buffer this way costs one write, where NIO's encoder writes each frame apart
    /// and masks byte by byte.
    ///
    /// ```swift
    /// var keys = WebSocketMaskKeys()
    /// WebSocketMasking.appendClientFrame(payload, opcode: 0x81, key: keys.next(), to: &buffer)  // text
    /// ```
    public static func appendClientFrame(
        _ payload: UnsafeRawBufferPointer, opcode: UInt8, key: UInt32, to output: inout ByteBuffer
    ) {
        let length = payload.count
        output.writeInteger(opcode)
        switch length {
        case ..<126:
            output.writeInteger(UInt8(0x80 | length))
        case ..<65536:
            output.writeInteger(UInt8(0x80 | 126))
            output.writeInteger(UInt16(length))
        default:
            output.writeInteger(UInt8(0x80 | 127))
            output.writeInteger(UInt64(length))
        }
        output.writeInteger(key)
        _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { target in
            let bytes = withUnsafeBytes(of: key.bigEndian) { ($0[0], $0[1], $0[2], $0[3]) }
            apply(key: bytes, from: payload, to: target)
            return length
        }
    }
}

/// Masking keys for a client's frames: xorshift64*, seeded once from the system generator, so a
/// connection sending thousands of frames does not ask the system for each key.
public struct WebSocketMaskKeys: Sendable {
    private var state: UInt64

    public init() {
        var system = SystemRandomNumberGenerator()
        state = system.next() | 1
    }

    /// The next key.
    public mutating func next() -> UInt32 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return UInt32(truncatingIfNeeded: (state &* 2_685_821_657_736_338_717) >> 32)
    }
}
