import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// REST requests for a namespace another process of the cluster serves: passed on to it as a
/// proxy (see ``RESTForwarding``).
extension CanopyServer {
    /// Marks a request this process passes on, so that a process that does not serve the namespace
    /// either (it moved meanwhile) answers it rather than passing it on again.
    static let forwardedBy = HTTPField.Name("Canopy-Forwarded-By")!

    /// The client proxied requests go through: it does not follow redirects (the answer, whatever
    /// it is, goes back to the client) and lives as long as the process, as `HTTPClient.shared` does.
    private static let forwardingClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .seconds(5)
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// Headers that belong to one connection and are not passed on (RFC 9110, 7.6.1), and the
    /// framing the proxy sets itself.
    private static let connectionHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length",
    ]

    /// How a request for `namespace`, served at `host`, is answered: proxied or redirected there
    /// (``ServerConfiguration/restForwarding``); one another process passed on is not passed on again.
    func forward(_ request: Request, to host: String, namespace: String) async -> Response {
        if request.headers[Self.forwardedBy] != nil {
            return Self.error(
                .serviceUnavailable,
                "Namespace \"\(namespace)\" moved to \(host) while this request was on its way; retry")
        }
        guard configuration.restForwarding.proxies(hasAuthorization: request.headers[.authorization] != nil) else {
            return Self.redirect(request, to: host, namespace: namespace)
        }
        return await proxy(request, to: host, namespace: namespace)
    }

    /// Sends `request` on to `host` (method, headers and body as received) and streams its answer
    /// back; an event stream stays open as long as both ends do.
    private func proxy(_ request: Request, to host: String, namespace: String) async -> Response {
        var outbound = HTTPClientRequest(url: "http://\(host)" + Self.pathAndQuery(of: request, namespace: namespace))
        outbound.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers where !Self.connectionHeaders.contains(field.name.canonicalName) {
            outbound.headers.add(name: field.name.rawName, value: field.value)
        }
        outbound.headers.add(name: Self.forwardedBy.rawName, value: configuration.nodeName ?? "canopy-server")
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            outbound.body = .stream(request.body, length: .known(length))
        } else if request.headers[.transferEncoding] != nil {
            outbound.body = .stream(request.body, length: .unknown)
        }
        let isEventStream = request.headers[.accept]?.contains("text/event-stream") == true
        do {
            let answer = try await Self.forwardingClient.execute(
                outbound, deadline: isEventStream ? .distantFuture : .now() + .seconds(300), logger: nil)
            var headers = HTTPFields()
            for header in answer.headers where !Self.connectionHeaders.contains(header.name.lowercased()) {
                if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
            }
            let status = HTTPResponse.Status(code: Int(answer.status.code), reasonPhrase: answer.status.reasonPhrase)
            return Response(status: status, headers: headers, body: ResponseBody(asyncSequence: answer.body))
        } catch {
            logger.warning(
                "could not pass a request on to the process serving its namespace",
                metadata: ["namespace": "\(namespace)", "host": "\(host)", "error": "\(error)"])
            return Self.error(
                .badGateway, "Namespace \"\(namespace)\" is served at \(host), which did not answer: \(error)")
        }
    }
}
