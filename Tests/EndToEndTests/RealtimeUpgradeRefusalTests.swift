import CanopyTesting
import Testing
import Tree

/// A realtime upgrade NIO's WebSocket upgrader cannot accept gets an HTTP answer, not a silent close.
struct RealtimeUpgradeRefusalTests {
    static func upgrade(_ extraHeaders: String) -> String {
        "GET /.ws?v=5&ns=test HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + extraHeaders
            + "\r\n"
    }

    @Test func anUpgradeWithoutAKeyIs400() async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(Self.upgrade("Sec-WebSocket-Version: 13\r\n"))
            #expect(answer.status == 400, "answer: \(answer.text)")
            #expect(answer.json?["error"]?.stringValue?.contains("Sec-WebSocket-Key") == true, "\(answer.body)")
            #expect(answer.closedByServer)
        }
    }

    @Test func anUpgradeForAnotherWebSocketVersionIs426() async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(
                Self.upgrade("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n"))
            #expect(answer.status == 426, "answer: \(answer.text)")
            #expect(answer.header("Sec-WebSocket-Version") == "13")
            #expect(answer.json?["error"]?.stringValue?.contains("99") == true, "\(answer.body)")
            #expect(answer.closedByServer)
        }
    }

    @Test func aGoodUpgradeStillSwitchesProtocols() async throws {
        try await withTestServer { server in
            // The server's hello follows the 101; the read ends with it (or at the timeout), the
            // connection open.
            let answer = try await server.exchangeRaw(
                Self.upgrade("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"),
                timeout: .seconds(30), until: #""t":"h""#)
            #expect(answer.status == 101, "answer: \(answer.text)")
            #expect(answer.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
            #expect(answer.body.contains(#""t":"h""#), "no hello after the 101: \(answer.body)")
            #expect(!answer.closedByServer)
        }
    }

    @Test func anUpgradeToAnotherPathIs400WithAJSONError() async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(
                "GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(answer.status == 400, "answer: \(answer.text)")
            #expect(answer.json?["error"]?.stringValue?.contains("/.ws") == true)
            #expect(answer.closedByServer)
        }
    }
}
