import NIOHTTP1

extension HTTPRefusal {
    /// The answer to a request NIO's decoder (llhttp, strict) could not parse, or `nil` for an error
    /// that is not about the request's bytes.
    ///
    /// The decoder reports an over-long request line and an over-long header block alike (both
    /// count against one limit), so `inRequestLine` says which it was.
    init?(parserError error: HTTPParserError, inRequestLine: Bool) {
        switch error {
        case .headerOverflow where inRequestLine:
            self.init(status: .uriTooLong, message: "Request line too long: the URL exceeds the server's limit")
        case .headerOverflow:
            self.init(
                status: .requestHeaderFieldsTooLarge,
                message: "Request header fields too large: too many header lines or too many bytes in them")
        case .invalidVersion:
            self.init(
                status: .httpVersionNotSupported,
                message: "HTTP version not supported: use HTTP/1.1 (or HTTP/1.0), with lines ending in CRLF")
        case .invalidMethod:
            self.init(
                status: .badRequest,
                message:
                    "Malformed request line: unknown method (methods are upper-case: GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS)"
            )
        case .invalidURL:
            self.init(status: .badRequest, message: "Malformed request line: the request target is not a valid URL")
        case .invalidHeaderToken:
            self.init(
                status: .badRequest,
                message: "Malformed header line: a header is a name without spaces, a colon, then the value")
        case .invalidContentLength:
            self.init(
                status: .badRequest, message: "Invalid Content-Length: it must be one non-negative decimal number")
        case .unexpectedContentLength:
            self.init(
                status: .badRequest,
                message: "Conflicting body length: Content-Length sent twice or together with Transfer-Encoding")
        case .invalidChunkSize:
            self.init(status: .badRequest, message: "Malformed chunked body: a chunk size is not a hexadecimal number")
        case .lfExpected, .invalidConstant, .strictModeAssertion, .invalidCharactersUsed, .unknown:
            // NIO folds several llhttp errors into `.unknown` (a missing CR, a bad Transfer-Encoding).
            self.init(
                status: .badRequest,
                message:
                    "Malformed HTTP request: a line not ending in CRLF, a control character, or an invalid Transfer-Encoding (or one beside Content-Length)"
            )
        case .trailingGarbage, .invalidEOFState, .closedConnection, .invalidStatus, .invalidInternalState, .paused:
            self.init(status: .badRequest, message: "Malformed HTTP request (\(error))")
        default:
            // The deprecated cases NIO no longer throws.
            self.init(status: .badRequest, message: "Malformed HTTP request (\(error))")
        }
    }
}
