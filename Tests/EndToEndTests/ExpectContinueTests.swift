import CanopyServer
import CanopyTesting
import Testing
import Tree

/// `Expect: 100-continue`, which curl sends with every body over 1 KB and then waits up to a
/// second for: a body the server takes is asked for at once with `100 Continue`, one it would
/// refuse is refused before it is sent. Over a plain TCP socket, byte for byte.
struct ExpectContinueTests {
    static func put(_ body: String, length: Int? = nil, version: String = "1.1", close: Bool = false) -> String {
        "PUT /e.json HTTP/\(version)\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
            + "Content-Length: \(length ?? body.utf8.count)\r\n\(close ? "Connection: close\r\n" : "")\r\n\(body)"
    }

    @Test func theBodyIsAskedForBeforeItIsSent() async throws {
        try await withTestServer { server in
            // Only the head: the answer must come while the body is still held back.
            let waiting = try await server.exchangeRaw(Self.put("", length: 7), until: "\r\n\r\n")
            #expect(waiting.text == "HTTP/1.1 100 Continue\r\n\r\n", "answer: \(waiting.text)")
            #expect(!waiting.closedByServer)
            #expect(try await server.http(.GET, "/e.json").body == "null")
        }
    }

    @Test func theRequestIsServedAfterThe100Continue() async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(Self.put(#""hello""#, close: true))
            #expect(answer.text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), "answer: \(answer.text)")
            #expect(answer.text.hasSuffix(#""hello""#))
            #expect(try await server.http(.GET, "/e.json").body == #""hello""#)
        }
    }

    @Test func aBodyOverTheLimitIsRefusedWithoutBeingAskedFor() async throws {
        try await withTestServer(configure: { $0.maxMessageBytes = 1 << 20 }) { server in
            let answer = try await server.exchangeRaw(Self.put("", length: (1 << 20) + 1))
            #expect(answer.status == 413, "answer: \(answer.text)")
            #expect(!answer.text.contains("100 Continue"))
            #expect(answer.header("Content-Type") == "application/json; charset=utf-8")
            let message = try #require(answer.json?["error"]?.stringValue)
            #expect(message.contains("1048576"), "\(message)")
            #expect(answer.closedByServer)
        }
    }

    @Test func noBodyOrHTTP10GetsNo100Continue() async throws {
        try await withTestServer { server in
            let get = try await server.exchangeRaw(
                "GET /e.json HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
            #expect(get.status == 200, "answer: \(get.text)")
            // An HTTP/1.0 client cannot read the interim answer: the expectation is ignored.
            let old = try await server.exchangeRaw(Self.put("1", version: "1.0", close: true))
            #expect(old.status == 200, "answer: \(old.text)")
            #expect(!old.text.contains("100 Continue"))
        }
    }
}
