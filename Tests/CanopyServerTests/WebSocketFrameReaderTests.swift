import NIOCore
import NIOWebSocket
import Testing

@testable import CanopyServer

/// The realtime handler reads client frames from the socket's bytes however the reads split them.
struct WebSocketFrameReaderTests {
    /// Client frames (masked) as NIO's encoder writes them, with the mask applied by hand.
    static func clientBytes(_ frames: [(WebSocketOpcode, String, fin: Bool)]) -> ByteBuffer {
        var bytes = ByteBuffer()
        let key: WebSocketMaskingKey = [1, 2, 3, 4]
        for (opcode, text, fin) in frames {
            var payload = ByteBuffer(string: text)
            payload.webSocketMask(key)
            let length = payload.readableBytes
            bytes.writeInteger(UInt8(fin ? 0x80 : 0) | UInt8(webSocketOpcode: opcode))
            if length < 126 {
                bytes.writeInteger(UInt8(0x80 | length))
            } else if length <= 0xFFFF {
                bytes.writeInteger(UInt8(0x80 | 126))
                bytes.writeInteger(UInt16(length))
            } else {
                bytes.writeInteger(UInt8(0x80 | 127))
                bytes.writeInteger(UInt64(length))
            }
            bytes.writeBytes([1, 2, 3, 4])
            bytes.writeBuffer(&payload)
        }
        return bytes
    }

    static func read(_ bytes: ByteBuffer, inPiecesOf size: Int) throws -> [(WebSocketOpcode, String, Bool)] {
        var reader = WebSocketFrameReader(maxFrameBytes: 1 << 24)
        var bytes = bytes
        var frames: [(WebSocketOpcode, String, Bool)] = []
        while let piece = bytes.readSlice(length: min(size, bytes.readableBytes)), piece.readableBytes > 0 {
            reader.append(piece)
            while let frame = try reader.next() {
                frames.append((frame.opcode, String(buffer: frame.unmaskedData), frame.fin))
            }
        }
        return frames
    }

    @Test func framesSplitAnywhereAcrossReadsAreReadWhole() throws {
        let sent: [(WebSocketOpcode, String, fin: Bool)] = [
            (.text, "{\"t\":\"d\"}", true), (.ping, "", true), (.text, String(repeating: "é", count: 200), false),
            (.continuation, String(repeating: "x", count: 70_000), true), (.connectionClose, "", true),
        ]
        let bytes = Self.clientBytes(sent)
        for size in [1, 2, 3, 7, 64, 1_000, 65_536, bytes.readableBytes] {
            let frames = try Self.read(bytes, inPiecesOf: size)
            #expect(frames.count == sent.count, "pieces of \(size)")
            for (frame, expected) in zip(frames, sent) {
                #expect(frame.0 == expected.0 && frame.1 == expected.1 && frame.2 == expected.fin, "pieces of \(size)")
            }
        }
    }

    @Test func aFrameOverTheLimitIsRefusedByItsHeader() throws {
        var reader = WebSocketFrameReader(maxFrameBytes: 100)
        var header = ByteBuffer()
        header.writeBytes([0x81, 0x80 | 126])
        header.writeInteger(UInt16(101))
        reader.append(header)
        #expect(throws: WebSocketFrameReader.Refusal.self) { try reader.next() }
    }
}
