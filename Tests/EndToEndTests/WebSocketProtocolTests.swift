import CanopyServer
import CanopyTesting
import Testing
import Transport
import Tree

/// RFC 6455 rules on the realtime WebSocket: a frame the server must refuse fails the connection
/// with the matching close code, the socket is closed, and nothing the frame carried is stored.
struct WebSocketProtocolTests {
    /// A frame that breaks the protocol, carrying a put of `"stored"` at `written`.
    struct BadFrame: Sendable, CustomTestStringConvertible {
        let testDescription: String
        var rsv: UInt8 = 0
        var opcode: UInt8 = 0x1
        var masked = true
    }

    static let protocolErrors: [BadFrame] =
        [0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF].map {
            BadFrame(testDescription: "reserved opcode 0x\(String($0, radix: 16))", opcode: $0)
        } + [
            BadFrame(testDescription: "RSV1 set", rsv: 0b100),
            BadFrame(testDescription: "RSV2 set", rsv: 0b010),
            BadFrame(testDescription: "RSV3 set", rsv: 0b001),
            BadFrame(testDescription: "unmasked text frame", masked: false),
            BadFrame(testDescription: "unmasked ping", opcode: 0x9, masked: false),
        ]

    static func putBytes(on socket: RawWebSocket, _ value: JSONValue = "stored") -> [UInt8] {
        socket.request(.put(path: "written", data: value, hash: nil)).bytes
    }

    /// The socket got a close frame with `code` and was then closed, and nothing was stored.
    static func expectFailed(
        _ socket: RawWebSocket, code: Int, observer: RealtimeTestClient,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(try await socket.closeCode() == code, sourceLocation: sourceLocation)
        #expect(try await socket.waitForEnd(), "the server kept the socket open", sourceLocation: sourceLocation)
        #expect(try await observer.get("written") == .null, sourceLocation: sourceLocation)
    }

    @Test(arguments: protocolErrors)
    func aFrameBreakingTheProtocolFailsTheConnectionWith1002(_ bad: BadFrame) async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            try socket.sendFrame(
                rsv: bad.rsv, opcode: bad.opcode, payload: Self.putBytes(on: socket), masked: bad.masked)
            try await Self.expectFailed(socket, code: 1002, observer: clients[0])
        }
    }

    /// The first bytes of a frame that already break the protocol, the rest of the frame never sent.
    struct BadHeader: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let bytes: [UInt8]
    }

    static let headerErrors = [
        BadHeader(testDescription: "reserved opcode 0x5 (the character 5 typed after the upgrade)", bytes: [0x35]),
        BadHeader(testDescription: "reserved opcode 0x5, one byte", bytes: [0x05]),
        BadHeader(testDescription: "reserved control opcode 0xB", bytes: [0x8B]),
        BadHeader(testDescription: "RSV1 on a text frame", bytes: [0xC1]),
        BadHeader(testDescription: "unmasked text frame of 125 bytes", bytes: [0x81, 0x7D]),
        BadHeader(testDescription: "unmasked fragment with a 16-bit length", bytes: [0x01, 0x7E, 0x10]),
    ]

    @Test(arguments: headerErrors)
    func aFrameHeaderBreakingTheProtocolFailsTheConnectionBeforeTheFrameArrives(_ bad: BadHeader) async throws {
        // A 10-minute heartbeat: within the wait below, only the header can end the connection.
        try await withClients(1, configure: { $0.heartbeatInterval = .seconds(600) }) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            try socket.send(bad.bytes)
            try await Self.expectFailed(socket, code: 1002, observer: clients[0])
        }
    }

    @Test(arguments: [
        BadFrame(testDescription: "RSV1 on a continuation", rsv: 0b100, opcode: 0x0),
        BadFrame(testDescription: "unmasked continuation", opcode: 0x0, masked: false),
    ])
    func aBadContinuationFrameFailsTheConnectionWith1002(_ bad: BadFrame) async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            let bytes = Self.putBytes(on: socket)
            try socket.sendFrame(fin: false, opcode: 0x1, payload: Array(bytes[..<10]))
            try socket.sendFrame(rsv: bad.rsv, opcode: bad.opcode, payload: Array(bytes[10...]), masked: bad.masked)
            try await Self.expectFailed(socket, code: 1002, observer: clients[0])
        }
    }

    @Test func garbageAfterTheUpgradeFailsTheConnectionWith1002() async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            let garbage =
                "GET /written.json HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: not-a-websocket/1.0\r\n"
                + "Accept: */*\r\nX-Padding: \(String(repeating: "x", count: 100))\r\n\r\n"
            try socket.send(Array(garbage.utf8))
            try await Self.expectFailed(socket, code: 1002, observer: clients[0])
        }
    }

    @Test func invalidUTF8FailsTheConnectionWith1007AndStoresNothing() async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            var bytes = Self.putBytes(on: socket, "st?red")
            let mark = try #require(bytes.firstIndex(of: UInt8(ascii: "?")))
            bytes[mark] = 0xFF
            try socket.sendFrame(opcode: 0x1, payload: bytes)
            try await Self.expectFailed(socket, code: 1007, observer: clients[0])
        }
    }

    @Test func invalidUTF8InTheLastFragmentOfAMessageFailsTheConnectionWith1007() async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            var bytes = Self.putBytes(on: socket, "caf?")
            let mark = try #require(bytes.firstIndex(of: UInt8(ascii: "?")))
            // A lead byte with no continuation byte after it.
            bytes[mark] = 0xC3
            try socket.sendFrame(fin: false, opcode: 0x1, payload: Array(bytes[..<mark]))
            try socket.sendFrame(opcode: 0x0, payload: Array(bytes[mark...]))
            try await Self.expectFailed(socket, code: 1007, observer: clients[0])
        }
    }

    @Test func aCharacterSplitAcrossFragmentsOfOneMessageIsAccepted() async throws {
        try await withClients(1) { server, clients in
            let socket = try await RawWebSocket.connect(to: server)
            let value: JSONValue = "café 🌳 \u{FFFD}"
            let (bytes, number) = socket.request(.put(path: "written", data: value, hash: nil))
            let lead = try #require(bytes.firstIndex(of: 0xC3))
            let treeLead = try #require(bytes.firstIndex(of: 0xF0))
            // Three fragments: inside "é", then inside the four bytes of "🌳".
            try socket.sendFrame(fin: false, opcode: 0x1, payload: Array(bytes[...lead]))
            try socket.sendFrame(fin: false, opcode: 0x0, payload: Array(bytes[(lead + 1)...(treeLead + 1)]))
            try socket.sendFrame(opcode: 0x0, payload: Array(bytes[(treeLead + 2)...]))
            #expect(try await socket.status(of: number) == .ok)
            #expect(try await clients[0].get("written") == value)
        }
    }
}
