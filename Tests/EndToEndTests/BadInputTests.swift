import CanopyServer
import CanopyTesting
import Testing
import Transport
import Tree

/// Bad input is answered with an error, changes nothing, and leaves other connections alone.
struct BadInputTests {
    /// A request the server must refuse with a status other than `ok`.
    struct BadRequest: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let action: ClientAction
    }

    /// Frames the server must answer with control `e` or an error status.
    struct BadFrame: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let text: String
    }

    static let original: JSONValue = ["v": 1, "x": ["keep": true]]

    static let deepPath = (0..<33).map { "k\($0)" }.joined(separator: "/")

    static func nested(_ depth: Int) -> JSONValue {
        (0..<depth).reduce(JSONValue.string("leaf")) { inner, _ in ["n": inner] }
    }

    static let badRequests: [BadRequest] = [
        BadRequest(testDescription: "key with .", action: .put(path: "data/a.b", data: 1, hash: nil)),
        BadRequest(testDescription: "key with $", action: .put(path: "data/a$b", data: 1, hash: nil)),
        BadRequest(testDescription: "key with [", action: .put(path: "data/[x]", data: 1, hash: nil)),
        BadRequest(testDescription: "key with #", action: .merge(path: "data/a#b", data: ["v": 2])),
        BadRequest(testDescription: "control character", action: .put(path: "data/a\u{1}b", data: 1, hash: nil)),
        BadRequest(
            testDescription: "key over 768 bytes",
            action: .put(path: "data/" + String(repeating: "k", count: 769), data: 1, hash: nil)),
        BadRequest(testDescription: "path over 32 levels", action: .put(path: deepPath, data: 1, hash: nil)),
        BadRequest(testDescription: "data over 32 levels", action: .put(path: "data/x", data: nested(32), hash: nil)),
        BadRequest(
            testDescription: "invalid key in data", action: .put(path: "data/x", data: ["bad.key": 1], hash: nil)),
        BadRequest(testDescription: "slash in data key", action: .put(path: "data/x", data: ["a/b": 1], hash: nil)),
        BadRequest(
            testDescription: ".value beside data", action: .put(path: "data/x", data: [".value": 1, "o": 2], hash: nil)),
        BadRequest(
            testDescription: "unknown server value", action: .put(path: "data/x", data: [".sv": "nonsense"], hash: nil)),
        BadRequest(testDescription: "overlapping merge paths", action: .merge(path: "data", data: ["x": 1, "x/y": 2])),
        BadRequest(testDescription: "invalid merge path", action: .merge(path: "data", data: ["v": 5, "in#valid": 1])),
        BadRequest(testDescription: "merge too deep", action: .merge(path: "data", data: [deepPath: 1])),
        BadRequest(testDescription: "merge of a non-object", action: .merge(path: "data", data: "text")),
        BadRequest(
            testDescription: "onDisconnect with bad data", action: .onDisconnectPut(path: "data", data: ["a.b": 1])),
        BadRequest(
            testDescription: "onDisconnect merge bad path", action: .onDisconnectMerge(path: "data", data: ["a$": 1])),
        BadRequest(
            testDescription: "listen at a bad path", action: .listen(path: "data/a#", query: nil, tag: nil, hash: "")),
        BadRequest(testDescription: "get at a bad path", action: .get(path: "data/]", query: nil)),
    ]

    static let badFrames: [BadFrame] = [
        BadFrame(testDescription: "not JSON", text: "{not json"),
        BadFrame(testDescription: "JSON array", text: "[1,2]"),
        BadFrame(testDescription: "unknown envelope", text: #"{"t":"x","d":{}}"#),
        BadFrame(testDescription: "envelope without body", text: #"{"t":"d"}"#),
        BadFrame(testDescription: "request without number", text: #"{"t":"d","d":{"a":"p","b":{"p":"data","d":2}}}"#),
        BadFrame(testDescription: "request without action", text: #"{"t":"d","d":{"r":41,"b":{"p":"data","d":2}}}"#),
        BadFrame(testDescription: "put without data", text: #"{"t":"d","d":{"r":42,"a":"p","b":{"p":"data"}}}"#),
        BadFrame(
            testDescription: "put with a numeric path", text: #"{"t":"d","d":{"r":43,"a":"p","b":{"p":5,"d":2}}}"#),
        BadFrame(testDescription: "seven-digit number frame", text: "1234567"),
    ]

    @Test(arguments: badRequests)
    func badRequestIsRefusedAndChangesNothing(_ bad: BadRequest) async throws {
        try await withClients(2) { _, clients in
            let (client, bystander) = (clients[0], clients[1])
            try await bystander.put("data", Self.original)
            try await bystander.listen("data")

            let answer = try await client.request(bad.action)
            #expect(answer.status != .ok, "\(bad.testDescription) was accepted")
            #expect(answer.status.text.hasPrefix("invalid"), "status \(answer.status)")

            try await Self.expectNothingChanged(client: client, bystander: bystander)
        }
    }

    @Test(arguments: badFrames)
    func badFrameIsAnsweredWithAnErrorAndChangesNothing(_ bad: BadFrame) async throws {
        try await withClients(2) { _, clients in
            let (client, bystander) = (clients[0], clients[1])
            try await bystander.put("data", Self.original)
            try await bystander.listen("data")

            try await client.sendRaw(bad.text)
            let answer = try await client.nextMessage()
            switch answer {
            case .error: break
            case .response(_, let status, _): #expect(status != .ok, "accepted: \(answer)")
            default: Issue.record("expected an error, got \(answer)")
            }
            try await Self.expectNothingChanged(client: client, bystander: bystander)
        }
    }

    @Test func valuesAtTheLimitsAreAccepted() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let longKey = String(repeating: "k", count: 768)
            try await client.put("limits/\(longKey)", 1)
            #expect(try await client.get("limits/\(longKey)") == 1)
            let deepest = (0..<32).map { "k\($0)" }.joined(separator: "/")
            try await client.put(deepest, "deep")
            #expect(try await client.get(deepest) == "deep")
            // "limits" (1) + 31 levels of data = 32.
            try await client.put("limits/nested", Self.nested(30))
            #expect(try await client.get("limits/nested") == Self.nested(30))
            let unicode = "ключ-🔑"
            try await client.put("limits/\(unicode)", "ok")
            #expect(try await client.get("limits")[unicode] == "ok")
        }
    }

    /// A 10,000-character put against a 4,096-byte cap, in one frame (16,384 characters per frame)
    /// or split into frames of 1,000 characters that are each under the cap.
    @Test(arguments: [16_384, 1_000])
    func anOversizeMessageIsRefusedAndOthersAreUnaffected(frameCharacters: Int) async throws {
        try await withClients(2, configure: { $0.maxMessageBytes = 4096 }) { _, clients in
            let (client, bystander) = (clients[0], clients[1])
            try await bystander.put("data", Self.original)
            try await bystander.listen("data")

            _ = try await client.send(
                .put(path: "data", data: .string(String(repeating: "x", count: 10_000)), hash: nil),
                maxFrameCharacters: frameCharacters)
            let answer = try await client.nextMessage()
            if case .error = answer {
            } else if case .response(_, let status, _) = answer {
                #expect(status != .ok)
            } else {
                Issue.record("expected an error, got \(answer)")
            }
            try await Self.expectBystanderUnaffected(bystander)
        }
    }

    /// Nothing changed (read by both), the refused client still works, and the bystander got no
    /// update: the next push it sees is for a later write of its own.
    static func expectNothingChanged(client: RealtimeTestClient, bystander: RealtimeTestClient) async throws {
        #expect(try await client.get("data") == original)
        try await expectBystanderUnaffected(bystander)
    }

    static func expectBystanderUnaffected(_ bystander: RealtimeTestClient) async throws {
        #expect(try await bystander.get("data") == original)
        try await bystander.put("data/v", 2)
        #expect(try await bystander.nextPush() == .overwrite(path: "data/v", data: 2, tag: nil))
    }
}

struct SlowConsumerTests {
    @Test func aClientThatStopsReadingIsDisconnectedAndOthersAreUnaffected() async throws {
        // A long heartbeat, so that only the queue limit can end the stalled connection here.
        let configure: (inout ServerConfiguration) -> Void = {
            $0.maxPendingOutboundBytes = 256 * 1024
            $0.heartbeatInterval = .seconds(120)
        }
        try await withClients(1, configure: configure) { server, clients in
            let writer = clients[0]
            let stalled = try await RealtimeTestClient.connect(to: server)
            try await stalled.requestOK(.onDisconnectPut(path: "presence/stalled", data: "gone"))
            try await stalled.listen("hot")
            try await stalled.vanish()
            #expect(await server.waitForOpenConnections(2, timeout: .seconds(5)))

            // 400 updates of 100 KB: far more than the cap and the kernel's socket buffers.
            let big = JSONValue.string(String(repeating: "x", count: 100_000))
            for index in 0..<400 {
                try await writer.put("hot", ["n": .number(Double(index)), "blob": big])
                if await server.waitForOpenConnections(1, timeout: .zero) { break }
            }
            #expect(
                await server.waitForOpenConnections(1, timeout: .seconds(20)), "the stalled client is still connected")
            // Its onDisconnect write ran, and the writer carries on.
            #expect(try await writer.get("presence/stalled") == "gone")
            try await writer.put("after", 1)
            #expect(try await writer.get("after") == 1)
            await stalled.close()
        }
    }
}
