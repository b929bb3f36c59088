import NIOHTTP1

extension HTTPRefusal {
    /// The methods Canopy serves at a data location, for `Allow` headers and messages.
    static let dataMethods = "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"

    /// A request line ending in LF without CR (llhttp calls it a bad version).
    static let bareLineFeed = HTTPRefusal(
        status: .badRequest, message: "Malformed request line: it ends in a bare LF instead of CRLF")

    /// A body over the server's limit (``ServerConfiguration/maxMessageBytes``), refused from its
    /// announced length before any of it is read.
    static func bodyTooLarge(limit: Int, announced: String) -> HTTPRefusal {
        HTTPRefusal(status: .payloadTooLarge, message: "Request body exceeds \(limit) bytes (\(announced))")
    }

    /// A chunk size of a chunked body that does not fit in a signed 64-bit length.
    static let chunkSizeOverflow = HTTPRefusal(
        status: .badRequest, message: "Malformed chunked body: a chunk size overflows (more than 2^63 - 1 bytes)")

    /// Checks what NIO's decoder lets through but Canopy refuses, where the request head is seen:
    /// a request line ending in a bare LF, CONNECT (its body would be a tunnel), ambiguous body
    /// lengths, a `Content-Length` over `maxBodyBytes`, an expectation other than `100-continue`,
    /// and realtime upgrades NIO's WebSocket upgrader would drop without an answer.
    init?(checking head: HTTPRequestHead, requestLineEndsInBareLF: Bool, maxBodyBytes: Int) {
        if requestLineEndsInBareLF {
            self = .bareLineFeed
            return
        }
        if head.method == .CONNECT {
            self.init(
                status: .methodNotAllowed, message: "Method CONNECT is not allowed; allowed: \(Self.dataMethods)",
                headers: [("Allow", Self.dataMethods)])
            return
        }
        let lengths = head.headers["Content-Length"]
        if lengths.count > 1 {
            self.init(status: .badRequest, message: "Conflicting body length: Content-Length sent more than once")
            return
        }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            self.init(
                status: .badRequest, message: "Invalid Content-Length: it must be one non-negative decimal number")
            return
        }
        if !lengths.isEmpty, head.headers.contains(name: "Transfer-Encoding") {
            self.init(
                status: .badRequest,
                message: "Conflicting body length: Content-Length sent together with Transfer-Encoding")
            return
        }
        if let length = lengths.first, Int(length).map({ $0 > maxBodyBytes }) ?? true {
            self = .bodyTooLarge(limit: maxBodyBytes, announced: "Content-Length: \(length)")
            return
        }
        let expectations = head.headers[canonicalForm: "Expect"].filter { !$0.isEmpty }
        if let unknown = expectations.first(where: { $0.lowercased() != "100-continue" }) {
            self.init(
                status: .expectationFailed,
                message: "Expectation \"\(unknown)\" is not supported; the server understands only Expect: 100-continue"
            )
            return
        }
        if let refusal = Self(checkingRealtimeUpgrade: head) {
            self = refusal
            return
        }
        return nil
    }

    /// A WebSocket upgrade to `/.ws` without a key, or for a version other than 13 (RFC 6455:
    /// 426 with the supported version).
    private init?(checkingRealtimeUpgrade head: HTTPRequestHead) {
        guard head.uri == "/.ws" || head.uri.hasPrefix("/.ws?"),
            head.headers[canonicalForm: "Connection"].contains(where: { $0.lowercased() == "upgrade" }),
            head.headers[canonicalForm: "Upgrade"].contains(where: { $0.lowercased() == "websocket" })
        else { return nil }
        let keys = head.headers["Sec-WebSocket-Key"]
        guard keys.count == 1, let key = keys.first, !key.isEmpty else {
            self.init(
                status: .badRequest,
                message: "WebSocket upgrade needs exactly one Sec-WebSocket-Key header (got \(keys.count))")
            return
        }
        let versions = head.headers["Sec-WebSocket-Version"]
        guard versions == ["13"] else {
            let sent = versions.isEmpty ? "none" : versions.joined(separator: ", ")
            self.init(
                status: .upgradeRequired,
                message: "WebSocket version \(sent) is not supported; use Sec-WebSocket-Version: 13",
                headers: [("Sec-WebSocket-Version", "13")])
            return
        }
        return nil
    }
}
