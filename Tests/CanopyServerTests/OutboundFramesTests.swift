import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
import Transport
import Tree

@testable import CanopyServer

/// The server frames its outbound messages itself; NIO's own decoder must read them back.
struct OutboundFramesTests {
    /// Decodes `buffer` with NIO's WebSocket decoder and joins the realtime protocol's split frames.
    static func decode(_ buffer: ByteBuffer) throws -> [String] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
        try channel.writeInbound(buffer)
        var assembler = FrameAssembler()
        var messages: [String] = []
        while let frame = try channel.readInbound(as: WebSocketFrame.self) {
            #expect(frame.fin && frame.opcode == .text && frame.maskKey == nil)
            if case .message(let text)? = try assembler.append(String(buffer: frame.unmaskedData)) {
                messages.append(text)
            }
        }
        _ = try channel.finish()
        return messages
    }

    @Test func everyLengthClassDecodesBackToTheSameMessages() throws {
        let texts = [
            "",
            String(repeating: "a", count: 125),
            String(repeating: "b", count: 126),
            String(repeating: "c", count: 16384),
            // Split into 16384-character pieces; with 4-byte characters a piece is 65,536 bytes,
            // which needs the 8-byte length.
            String(repeating: "d", count: 40_000),
            String(repeating: "🔑", count: 16_385),
        ]
        let long = ServerMessage.overwrite(path: "a", data: .string(String(repeating: "e", count: 20_000)), tag: nil)
        let messages: [OutboundMessage] =
            [.message(.ok(7))] + texts.map { .frames(OutboundFrames.frames(of: $0)) } + [
                .message(long), .message(.ok(8)),
            ]
        let buffers = OutboundFrames.encode(messages, allocator: ByteBufferAllocator())
        var joined = ByteBuffer()
        for var buffer in buffers { joined.writeBuffer(&buffer) }
        let decoded = try Self.decode(joined)
        #expect(decoded == [ServerMessage.ok(7).text] + texts + [long.text, ServerMessage.ok(8).text])
    }

    @Test func largeFramedPushesAreWrittenSharedNotCopied() throws {
        let large = OutboundFrames.frames(of: String(repeating: "x", count: 100_000))
        let small = OutboundFrames.frames(of: "small")
        let buffers = OutboundFrames.encode(
            [.frames(small), .frames(large), .message(.ok(1)), .frames(large)], allocator: ByteBufferAllocator())
        #expect(buffers.count == 4)
        // The large frames are the push's own storage, shared by every connection it goes to.
        for index in [1, 3] {
            #expect(
                buffers[index].withUnsafeReadableBytes { $0.baseAddress }
                    == large.withUnsafeReadableBytes { $0.baseAddress })
        }
        var joined = ByteBuffer()
        for var buffer in buffers { joined.writeBuffer(&buffer) }
        let text = String(repeating: "x", count: 100_000)
        #expect(try Self.decode(joined) == ["small", text, ServerMessage.ok(1).text, text])
    }
}
