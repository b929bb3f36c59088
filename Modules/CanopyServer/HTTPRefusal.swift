import NIOCore
import NIOHTTP1
import Tree

/// An HTTP request the server answers with an error before any responder sees it: the status, a
/// message saying what was wrong (sent as `{"error": message}`), and any header the status calls
/// for (`Allow`, `Sec-WebSocket-Version`).
struct HTTPRefusal: Error {
    var status: HTTPResponseStatus
    var message: String
    var headers: [(name: String, value: String)] = []

    /// The whole response: JSON body, its length, `Connection: close` (the server closes after it)
    /// and `Access-Control-Allow-Origin: *` (a browser may read every REST answer, errors too).
    func response(allocator: ByteBufferAllocator) -> (head: HTTPResponseHead, body: ByteBuffer) {
        let body = allocator.buffer(string: JSONValue.object(["error": .string(message)]).serialized())
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: "application/json; charset=utf-8")
        fields.add(name: "Content-Length", value: String(body.readableBytes))
        fields.add(name: "Connection", value: "close")
        fields.add(name: "Access-Control-Allow-Origin", value: "*")
        for header in headers { fields.add(name: header.name, value: header.value) }
        return (HTTPResponseHead(version: .http1_1, status: status, headers: fields), body)
    }

    /// ``response(allocator:)`` as the bytes sent on the wire; without the body (its length kept)
    /// for a `HEAD` request.
    ///
    /// NIO's response encoder would drop the body and its length from any answer to `CONNECT`, as
    /// for a tunnel; only a 2xx answer opens one (RFC 9110 §9.3.6), so a refusal is written as it is.
    func serialized(allocator: ByteBufferAllocator, withBody: Bool = true) -> ByteBuffer {
        let (head, body) = response(allocator: allocator)
        var bytes = allocator.buffer(capacity: 256 + body.readableBytes)
        bytes.writeString("HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for (name, value) in head.headers { bytes.writeString("\(name): \(value)\r\n") }
        bytes.writeString("\r\n")
        if withBody { bytes.writeImmutableBuffer(body) }
        return bytes
    }
}
