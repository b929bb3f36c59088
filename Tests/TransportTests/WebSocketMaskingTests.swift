import NIOCore
import Testing
import Transport

struct WebSocketMaskingTests {
    /// Byte by byte, as RFC 6455 spells it: octet i is XORed with key octet i mod 4.
    static func reference(_ payload: [UInt8], _ key: [UInt8]) -> [UInt8] {
        payload.indices.map { payload[$0] ^ key[$0 % 4] }
    }

    @Test func matchesTheRFCForEveryLengthInPlaceOrNot() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...41 {
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let key = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Self.reference(payload, key)
            var output = [UInt8](repeating: 0, count: length + 3)
            payload.withUnsafeBytes { source in
                output.withUnsafeMutableBytes { target in
                    WebSocketMasking.apply(key: (key[0], key[1], key[2], key[3]), from: source, to: target)
                }
            }
            #expect(Array(output.prefix(length)) == expected, "length \(length)")
            #expect(output.suffix(3) == [0, 0, 0], "wrote past the payload at length \(length)")
            var inPlace = payload
            inPlace.withUnsafeMutableBytes { bytes in
                WebSocketMasking.apply(
                    key: (key[0], key[1], key[2], key[3]), from: UnsafeRawBufferPointer(bytes), to: bytes)
            }
            #expect(inPlace == expected, "in place, length \(length)")
        }
    }

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
            #expect(masked == Self.reference(payload, keyBytes), "length \(length)")
            #expect(frame.readableBytes == 0)
        }
    }
}
