import Testing
import Transport

struct FramingTests {
    @Test func passesShortMessagesThroughAndIgnoresKeepalives() throws {
        var assembler = FrameAssembler()
        #expect(try assembler.append(#"{"t":"d","d":{}}"#) == .message(#"{"t":"d","d":{}}"#))
        #expect(try assembler.append("0") == .keepalive)
        #expect(try assembler.append("{}") == .message("{}"))
    }

    @Test func joinsCountedFrames() throws {
        var assembler = FrameAssembler()
        #expect(try assembler.append("3") == nil)
        #expect(try assembler.append(#"{"a""#) == nil)
        #expect(try assembler.append(#":"#) == nil)
        #expect(try assembler.append(#"1}"#) == .message(#"{"a":1}"#))
        #expect(try assembler.append("7") == nil, "a new count starts a new message")
    }

    @Test func splitsLongMessagesIntoFramesThatReassemble() throws {
        let message = "{\"v\":\"" + String(repeating: "é∂x", count: 20_000) + "\"}"
        let frames = FrameAssembler.frames(for: message)
        #expect(frames.count > 2)
        #expect(Int(frames[0]) == frames.count - 1)
        #expect(frames.dropFirst().allSatisfy { $0.count <= FrameAssembler.maxFrameCharacters })
        var assembler = FrameAssembler()
        var output: FrameAssembler.Output?
        for frame in frames { output = try assembler.append(frame) }
        #expect(output == .message(message))
        #expect(FrameAssembler.frames(for: "short") == ["short"])
    }

    @Test func theLimitCountsCharactersNotBytes() {
        // 8,192 two-byte characters: 16,384 bytes and characters, then one character more.
        let atLimit =
            String(repeating: "é", count: FrameAssembler.maxFrameCharacters / 2) + String(repeating: "x", count: 8192)
        #expect(FrameAssembler.fitsOneFrame(atLimit))
        #expect(FrameAssembler.frames(for: atLimit) == [atLimit])
        #expect(!FrameAssembler.fitsOneFrame(atLimit + "é"))
        #expect(FrameAssembler.frames(for: atLimit + "é").count == 3)
        let wide = String(repeating: "é", count: FrameAssembler.maxFrameCharacters)
        #expect(wide.utf8.count > FrameAssembler.maxFrameCharacters && FrameAssembler.fitsOneFrame(wide))
    }

    @Test func refusesMessagesOverTheLimitAndRecovers() throws {
        var assembler = FrameAssembler(maxMessageBytes: 10)
        #expect(throws: ProtocolError.messageTooLarge(bytes: 11, limit: 10)) { try assembler.append("12345678901") }
        #expect(try assembler.append("2") == nil)
        #expect(try assembler.append("123456") == nil)
        #expect(throws: ProtocolError.self) { try assembler.append("123456") }
        #expect(try assembler.append("{}") == .message("{}"), "the assembler starts afresh after a refusal")
    }
}
