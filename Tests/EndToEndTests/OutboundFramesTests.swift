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
            [.message(.ok(7))] + texts.map { .text(ByteBuffer(string: $0)) } + [.message(long), .message(.ok(8))]
        let decoded = try Self.decode(OutboundFrames.encode(messages, allocator: ByteBufferAllocator()))
        #expect(decoded == [ServerMessage.ok(7).text] + texts + [long.text, ServerMessage.ok(8).text])
    }
}
