import NIOCore
import RealtimeClientSocket
import Testing
import Transport

struct ClientFrameTests {
    /// A client frame read back as RFC 6455 section 5.2 lays it out, at each of the three length
    /// encodings and their edges: FIN and opcode, the mask bit and length, the key, the masked payload.
    @Test func clientFramesReadBackAsTheRFCLaysThemOut() {
        var keys = WebSocketMaskKeys()
        for length in [0, 1, 125, 126, 127, 65535, 65536, 70000] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let key = keys.next()
            var frame = ByteBuffer()
            payload.withUnsafeBytes { WebSocketMasking.appendClientFrame($0, opcode: 0x81, key: key, to: &frame) }

            let first = frame.readInteger(as: UInt8.self)
            let second = frame.readInteger(as: UInt8.self) ?? 0
            #expect(first == 0x81)
            #expect(second & 0x80 == 0x80, "a client frame is masked")
            let declared: Int? =
                switch second & 0x7F {
                case 126: frame.readInteger(as: UInt16.self).map(Int.init)
                case 127: frame.readInteger(as: UInt64.self).map(Int.init)
                case let short: Int(short)
                }
            #expect(declared == length)
            let readKey = frame.readInteger(as: UInt32.self)
            #expect(readKey == key)
            let keyBytes = withUnsafeBytes(of: key.bigEndian) { Array($0) }
            let masked = frame.readBytes(length: length)
            #expect(masked == payload.indices.map { payload[$0] ^ keyBytes[$0 % 4] }, "length \(length)")
            #expect(frame.readableBytes == 0)
        }
    }
}
