import CanopyTesting
import Foundation
import Testing
import Tree

/// A request that is not acceptable HTTP is answered with a status and a JSON error saying what was
/// wrong, changes nothing, and the server closes the connection. Sent over a plain TCP socket, byte
/// for byte.
struct MalformedHTTPTests {
    struct Malformed: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let bytes: [UInt8]
        let status: Int
        /// A word the error message must contain (case-insensitive).
        let mentions: String

        init(_ description: String, _ text: String, _ status: Int, mentions: String) {
            self.init(description, Array(text.utf8), status, mentions: mentions)
        }

        init(_ description: String, _ bytes: [UInt8], _ status: Int, mentions: String) {
            self.testDescription = description
            self.bytes = bytes
            self.status = status
            self.mentions = mentions
        }
    }

    static let megabyte = String(repeating: "a", count: 1 << 20)

    static let cases: [Malformed] = [
        Malformed(
            "header line without a colon", "GET /m.json HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400,
            mentions: "header"),
        Malformed(
            "two Content-Lengths",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n1", 400,
            mentions: "Content-Length"),
        Malformed(
            "negative Content-Length", "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n1", 400,
            mentions: "Content-Length"),
        Malformed(
            "non-numeric Content-Length", "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: one\r\n\r\n1", 400,
            mentions: "Content-Length"),
        Malformed(
            "Content-Length with Transfer-Encoding",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n1\r\n0\r\n\r\n",
            400, mentions: "Transfer-Encoding"),
        Malformed("unknown method", "FROB /m.json HTTP/1.1\r\nHost: x\r\n\r\n", 400, mentions: "method"),
        Malformed("lower-case method", "get /m.json HTTP/1.1\r\nHost: x\r\n\r\n", 400, mentions: "method"),
        Malformed("HTTP/0.9", "GET /m.json\r\n\r\n", 505, mentions: "version"),
        Malformed("HTTP/9.9", "GET /m.json HTTP/9.9\r\nHost: x\r\n\r\n", 505, mentions: "version"),
        Malformed("HTTP/2.0 as text", "GET /m.json HTTP/2.0\r\nHost: x\r\n\r\n", 505, mentions: "version"),
        Malformed("bare LF line ends", "GET /m.json HTTP/1.1\nHost: x\n\n", 400, mentions: "LF"),
        Malformed("bare LF after a header", "GET /m.json HTTP/1.1\r\nHost: x\n\r\n", 400, mentions: "CRLF"),
        Malformed(
            "garbage bytes", [0x16, 0x03, 0x01, 0x00, 0xff, 0xfe, 0x0d, 0x0a, 0x0d, 0x0a], 400, mentions: "method"),
        Malformed("1 MB URL", "GET /\(megabyte).json HTTP/1.1\r\nHost: x\r\n\r\n", 414, mentions: "URL"),
        Malformed(
            "1 MB header", "GET /m.json HTTP/1.1\r\nHost: x\r\nX-Big: \(megabyte)\r\n\r\n", 431, mentions: "header"),
        Malformed(
            "100,000 headers",
            "GET /m.json HTTP/1.1\r\nHost: x\r\n" + (0..<100_000).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431,
            mentions: "header"),
        Malformed(
            "malformed chunk size",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n1\r\n0\r\n\r\n", 400,
            mentions: "chunk"),
        Malformed(
            "malformed chunk size after a good chunk",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n7\r\nzz\r\n", 400,
            mentions: "chunk"),
        // Refused from what is announced, before any of the body is sent.
        Malformed(
            "Content-Length over the body limit",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000000\r\n\r\n", 413, mentions: "exceeds"),
        Malformed(
            "chunk size that overflows",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", 400,
            mentions: "overflows"),
        Malformed(
            "chunk over the body limit after a good chunk",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n7\r\n1000001\r\n", 413,
            mentions: "exceeds"),
        Malformed(
            "expectation other than 100-continue",
            "PUT /m.json HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\n1", 417,
            mentions: "expect"),
    ]

    @Test(arguments: cases)
    func isAnsweredWithAJSONErrorAndTheConnectionClosed(_ malformed: Malformed) async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(malformed.bytes)
            #expect(answer.status == malformed.status, "answer: \(answer.text.prefix(300))")
            #expect(answer.header("Content-Type") == "application/json; charset=utf-8")
            #expect(answer.header("Access-Control-Allow-Origin") == "*")
            let message = try #require(answer.json?["error"]?.stringValue, "body: \(answer.body.prefix(300))")
            #expect(
                message.lowercased().contains(malformed.mentions.lowercased()),
                "\"\(message)\" does not mention \(malformed.mentions)")
            #expect(answer.closedByServer, "the connection was left open")
            #expect(try await server.http(.GET, "/m.json").body == "null")
        }
    }

    @Test func aWellFormedRequestOnARawConnectionIsServed() async throws {
        try await withTestServer { server in
            let answer = try await server.exchangeRaw(
                "PUT /m.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\n7")
            #expect(answer.status == 200, "answer: \(answer.text.prefix(300))")
            #expect(answer.body == "7")
            #expect(try await server.http(.GET, "/m.json").body == "7")
        }
    }

    @Test func chunkedBodiesAndRequestsSentBehindThemAreServed() async throws {
        try await withTestServer { server in
            // A chunk extension, a trailer, and two more requests in the same bytes.
            let chunked =
                "PUT /c.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3;note=a\r\n{\"a\r\n6\r\n\": 12}\r\n0\r\nX-Trailer: t\r\n\r\n"
            let fixed = "PUT /f.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n8"
            let read = "GET /c.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            // The server closes after the last answer (Connection: close): the generous timeout
            // only bounds a busy machine.
            let answer = try await server.exchangeRaw(chunked + fixed + read, timeout: .seconds(60))
            #expect(answer.text.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "answer: \(answer.text)")
            #expect(answer.text.hasSuffix(#"{"a":12}"#))
            #expect(try await server.http(.GET, "/f.json").body == "8")
        }
    }
}
