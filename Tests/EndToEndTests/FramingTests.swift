import CanopyTesting
import Testing
import Transport
import Tree

/// Messages longer than 16384 characters travel as a count frame and pieces, both ways.
struct FramingTests {
    static let bigValue = String(repeating: "0123456789abcdef", count: 6400)  // 100 KB

    @Test(arguments: [16384, 1000])
    func aLargeValueWrittenInSplitFramesRoundTrips(frameSize: Int) async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let number = try await client.send(
                .put(path: "big", data: ["text": .string(Self.bigValue)], hash: nil), maxFrameCharacters: frameSize)
            #expect(try await client.response(to: number).status == .ok)
            #expect(try await client.get("big/text") == .string(Self.bigValue))
        }
    }

    @Test func handSplitFramesAreJoined() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let message = ClientMessage.request(
                ClientRequest(number: 900, action: .put(path: "hand", data: "split", hash: nil)))
            let text = message.json.serialized()
            let middle = text.index(text.startIndex, offsetBy: text.count / 2)
            try await client.sendRaw("3", String(text[..<middle]), "", String(text[middle...]))
            #expect(try await client.response(to: 900).status == .ok)
            #expect(try await client.get("hand") == "split")
        }
    }

    @Test func theServerSplitsItsOwnLargeMessages() async throws {
        try await withClients(2) { _, clients in
            let (writer, listener) = (clients[0], clients[1])
            try await listener.listen("big")
            let framesBefore = listener.receivedFrames.count
            let value: JSONValue = ["text": .string(Self.bigValue), "more": .string(Self.bigValue + "é")]
            try await writer.put("big", value)

            #expect(try await listener.nextPush() == .overwrite(path: "big", data: value, tag: nil))
            let frames = Array(listener.receivedFrames.dropFirst(framesBefore))
            #expect(frames.count > 2)
            #expect(frames.allSatisfy { $0.count <= FrameAssembler.maxFrameCharacters })
            #expect(
                frames.first.flatMap { Int($0) } == frames.count - 1, "count frame: \(frames.first?.prefix(10) ?? "")")
            #expect(listener.undecodableMessages.isEmpty)

            // A one-shot read's answer is split the same way.
            let before = writer.receivedFrames.count
            #expect(try await writer.get("big") == value)
            let answerFrames = writer.receivedFrames.dropFirst(before)
            #expect(answerFrames.count > 2 && answerFrames.allSatisfy { $0.count <= FrameAssembler.maxFrameCharacters })
        }
    }

    @Test func smallMessagesAreNotSplit() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let before = client.receivedFrames.count
            try await client.put("small", .string(String(repeating: "x", count: 1000)))
            let frames = client.receivedFrames.dropFirst(before)
            #expect(frames.count == 1 && frames.first?.hasPrefix("{") == true, "\(frames)")
        }
    }
}
