import NIOCore
import NIOHTTP1
import Tree

/// An HTTP request the server answers with an error before any responder sees it: the status, a
/// message saying what was wrong (sent as `{"error": message}`), and any header the status calls
/// for (`Allow`, `Sec-WebSocket-Version`).
struct HTTPRefusal {
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
}
