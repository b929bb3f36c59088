import HTTPTypes
import Hummingbird
import NIOCore

/// `/health` (`ok` while the server runs) and `/metrics` (Prometheus' text format).
struct StatusController: Sendable {
    static let paths: Set<String> = ["/health", "/metrics"]

    let metrics: ServerMetrics

    func respond(to request: Request) -> Response {
        guard request.method == .get || request.method == .head else {
            return RESTResponse.methodNotAllowed(request.method, allowed: "GET, HEAD, OPTIONS")
        }
        guard request.uri.path == "/metrics" else {
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
    }
}
