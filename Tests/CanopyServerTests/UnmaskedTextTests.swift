import NIOCore
import NIOWebSocket
import Testing

@testable import CanopyServer

/// The server unmasks client frames itself, eight bytes at a time; it must read what NIO reads.
struct UnmaskedTextTests {
    /// A frame as the server reads it, masked with `key`.
    static func frame(_ masked: ByteBuffer, key: WebSocketMaskingKey?) -> InboundFrame {
        InboundFrame(fin: true, opcode: .text, maskKey: key.map { ($0[0], $0[1], $0[2], $0[3]) }, data: masked)
    }

    @Test func agreesWithNIOForEveryLengthAndKey() {
        var generator = SystemRandomNumberGenerator()
        let text = #"{"t":"d","d":{"r":12,"a":"p","b":{"p":"a/é/∂","d":"x"}}}"#
        for length in 0...text.utf8.count {
            let payload = String(decoding: Array(text.utf8.prefix(length)), as: UTF8.self)
            for _ in 0..<4 {
                let key = WebSocketMaskingKey.random(using: &generator)
                var masked = ByteBuffer(string: payload)
                masked.webSocketMask(key)
                let frame = Self.frame(masked, key: key)
                let nio = WebSocketFrame(fin: true, opcode: .text, maskKey: key, data: masked)
                #expect(frame.unmaskedText == String(buffer: nio.unmaskedData), "length \(length), key \(key)")
                #expect(frame.unmaskedData == nio.unmaskedData, "length \(length), key \(key)")
                #expect(frame.unmaskedText == payload)
            }
        }
        let unmasked = Self.frame(ByteBuffer(string: text), key: nil)
        #expect(unmasked.unmaskedText == text)
    }

    @Test(
        arguments: [
            [0x61, 0xFF, 0x62, 0xC3, 0x28, 0x63, 0x64, 0x65, 0x66, 0xE2],
            // A truncated four-byte sequence: repaired, it is one U+FFFD of the same length.
            [0x61, 0xF0, 0x9F, 0x98, 0x62],
            [0xED, 0xA0, 0x80],
            [0xC3],
        ] as [[UInt8]])
    func refusesInvalidUTF8(bytes: [UInt8]) throws {
        let key = try #require(WebSocketMaskingKey([1, 2, 3, 4]))
        var masked = ByteBuffer(bytes: bytes)
        masked.webSocketMask(key)
        #expect(Self.frame(masked, key: key).unmaskedText == nil)
        #expect(Self.frame(ByteBuffer(bytes: bytes), key: nil).unmaskedText == nil)
    }

    @Test func keepsAReplacementCharacterTheClientSent() throws {
        let key = try #require(WebSocketMaskingKey([9, 8, 7, 6]))
        let text = "a\u{FFFD}b \u{F8FF}"
        var masked = ByteBuffer(string: text)
        masked.webSocketMask(key)
        #expect(Self.frame(masked, key: key).unmaskedText == text)
    }
}
