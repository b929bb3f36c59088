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
}
