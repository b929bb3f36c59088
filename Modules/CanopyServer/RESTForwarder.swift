import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import Tree

/// REST requests for a namespace another process of the cluster serves: redirected or passed on
/// to it as a proxy (see ``RESTForwarding``).
struct RESTForwarder: Sendable {
    let forwarding: RESTForwarding
    let origins: OriginResolver
    /// What this process calls itself in ``forwardedBy``.
    let nodeName: String?
    /// The file of the authorities the other processes' certificates are verified against, beside
    /// the system's (``ServerConfiguration/tlsCAFile``).
    let caFile: String?
    /// Bytes of a proxied event stream held for a client that does not read them.
    let maxPendingBytes: Int
    let logger: Logger

    /// Marks a request this process passes on, so that a process that does not serve the namespace
    /// either (it moved meanwhile) answers it rather than passing it on again.
    static let forwardedBy = HTTPField.Name("Canopy-Forwarded-By")!

    /// The client proxied requests go through: it does not follow redirects (the answer, whatever
    /// it is, goes back to the client), keeps as many connections to a process as requests need
    /// (each proxied event stream holds one for its life), gives up on an answer silent for two
    /// minutes (an event stream gets a keep-alive at least every `--sse-keepalive-interval`), and
    /// lives as long as the process, as `HTTPClient.shared` does; one per `--tls-ca-file` (the
    /// other processes' certificates are verified against the system's trust roots and that file).
    private static func forwardingClient(trusting caFile: String?) -> HTTPClient {
        forwardingClients.withLock { clients in
            if let client = clients[caFile] { return client }
            let client = makeForwardingClient(trusting: caFile)
            clients[caFile] = client
            return client
        }
    }

    private static let forwardingClients = Mutex<[String?: HTTPClient]>([:])

    private static func makeForwardingClient(trusting caFile: String?) -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .seconds(5)
        configuration.timeout.read = .seconds(120)
        configuration.decompression = .disabled
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 100_000)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        configuration.tlsConfiguration = tls
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Headers that belong to one connection and are not passed on (RFC 9110, 7.6.1), and the
    /// framing the proxy sets itself.
    private static let connectionHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length",
    ]

    /// How a request for `namespace`, served at `host`, is answered: proxied or redirected there
    /// (``ServerConfiguration/restForwarding``); one another process passed on is not passed on again.
    func forward(_ request: Request, to host: String, namespace: String, channel: any Channel) async -> Response {
        if request.headers[Self.forwardedBy] != nil {
            return RESTResponse.error(
                .serviceUnavailable,
                "Namespace \"\(namespace)\" moved to \(host) while this request was on its way; retry")
        }
        let origin = origins.origin(of: request, channel: channel)
        guard forwarding.proxies(hasAuthorization: request.headers[.authorization] != nil) else {
            return Self.redirect(request, to: host, namespace: namespace, origin: origin)
        }
        return await proxy(request, to: host, namespace: namespace, origin: origin, channel: channel)
    }

    /// Sends `request` on to `host` (method, headers and body as received) and streams its answer
    /// back; the upstream request ends when the client leaves (`channel` closes or its input does),
    /// and a client that does not read what it is sent is closed past `--max-pending-outbound-bytes`.
    ///
    /// The other process hears of the client as a proxy tells it: `X-Forwarded-Proto` is the scheme
    /// the client used (`origin`), and this request's peer is appended to `X-Forwarded-For`; it
    /// believes them when this process is among its ``ServerConfiguration/trustedProxies``.
    private func proxy(
        _ request: Request, to host: String, namespace: String, origin: ClientOrigin, channel: any Channel
    ) async -> Response {
        // Every process of a cluster serves TLS or none does (the SDKs keep their scheme when sent to
        // another), so the owner speaks this process's scheme.
        let upstreamScheme = origins.servesTLS ? "https" : "http"
        var outbound = HTTPClientRequest(
            url: "\(upstreamScheme)://\(host)" + Self.pathAndQuery(of: request, namespace: namespace))
        outbound.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers
        where !Self.connectionHeaders.contains(field.name.canonicalName)
            && field.name.canonicalName != "x-forwarded-proto"
        {
            outbound.headers.add(name: field.name.rawName, value: field.value)
        }
        outbound.headers.replaceOrAdd(name: ForwardedHeaders.forwardedProtoName, value: origin.scheme)
        if let peer = channel.remoteAddress?.clientAddress {
            let chain = request.headers[values: HTTPField.Name(ForwardedHeaders.forwardedForName)!] + [peer]
            outbound.headers.replaceOrAdd(name: ForwardedHeaders.forwardedForName, value: chain.joined(separator: ", "))
        }
        outbound.headers.add(name: Self.forwardedBy.rawName, value: nodeName ?? "canopy-server")
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            outbound.body = .stream(request.body, length: .known(length))
        } else if request.headers[.transferEncoding] != nil {
            outbound.body = .stream(request.body, length: .unknown)
        }
        let answer: HTTPClientResponse
        do {
            answer = try await Self.forwardingClient(trusting: caFile).execute(
                outbound, deadline: .distantFuture, logger: nil)
        } catch {
            logger.warning(
                "could not pass a request on to the process serving its namespace",
                metadata: ["namespace": "\(namespace)", "host": "\(host)", "error": "\(error)"])
            return RESTResponse.error(
                .badGateway, "Namespace \"\(namespace)\" is served at \(host), which did not answer: \(error)")
        }
        var headers = HTTPFields()
        for header in answer.headers where !Self.connectionHeaders.contains(header.name.lowercased()) {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        let status = HTTPResponse.Status(code: Int(answer.status.code), reasonPhrase: answer.status.reasonPhrase)
        // An event stream waits between events, so it is watched for its client leaving; any other
        // answer ends at a failed write when its client left, without a watch (which would also
        // add a close callback per request on a kept-alive connection).
        let isEventStream =
            request.method == .get && request.headers[.accept]?.contains("text/event-stream") == true
        let body =
            isEventStream
            ? await relay(answer.body, to: channel, limit: maxPendingBytes)
            : ResponseBody(asyncSequence: answer.body)
        return Response(status: status, headers: headers, body: body)
    }

    /// The body of a proxied event stream: a task reads `upstream` while the client is there, and ends it
    /// (which ends the upstream request) once the client leaves; bytes read but not yet written
    /// to the client past `limit` close the client's connection, as a stalled reader's.
    private func relay(
        _ upstream: HTTPClientResponse.Body, to channel: any Channel, limit: Int
    ) async -> ResponseBody {
        let (chunks, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        let pending = Atomic<Int>(0)
        let reader = Task {
            do {
                for try await chunk in upstream {
                    if pending.add(chunk.readableBytes, ordering: .relaxed).newValue > limit {
                        channel.close(promise: nil)
                        break
                    }
                    continuation.yield(chunk)
                }
            } catch {}
            continuation.finish()
        }
        let end = OnceAction {
            reader.cancel()
            continuation.finish()
        }
        // A client that leaves only closes its input (Hummingbird allows half-closed connections).
        let inputClosed = InputClosedHandler { end.run() }
        channel.closeFuture.whenComplete { _ in end.run() }
        try? await channel.pipeline.addHandler(inputClosed, position: .first).get()
        return ResponseBody { writer in
            defer {
                end.run()
                channel.pipeline.removeHandler(inputClosed, promise: nil)
            }
            for await chunk in chunks {
                pending.subtract(chunk.readableBytes, ordering: .relaxed)
                try await writer.write(chunk)
            }
            try await writer.finish(nil)
        }
    }

    /// `307 Temporary Redirect` to the same path on `host`, the process serving `namespace`, with
    /// `ns=` in the query (the namespace may have come from this request's host name). Method and
    /// body are kept by clients that follow a 307 (curl -L, Python's requests, firebase-admin).
    /// The scheme is the one the client used (`origin`).
    static func redirect(_ request: Request, to host: String, namespace: String, origin: ClientOrigin) -> Response {
        var headers = HTTPFields()
        headers[.location] = "\(origin.scheme)://\(host)" + pathAndQuery(of: request, namespace: namespace)
        headers[.contentType] = "application/json; charset=utf-8"
        let text = JSONValue.object(["error": .string("Namespace \"\(namespace)\" is served at \(host)")]).serialized()
        return Response(
            status: .temporaryRedirect, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The path and query of `request` as received, byte for byte (URLComponents' setters end the
    /// process on characters they do not expect, which a client chooses), with `ns=namespace` (the
    /// namespace may have come from the request's host name; its name needs no escaping).
    static func pathAndQuery(of request: Request, namespace: String) -> String {
        var parameters = (request.uri.query ?? "").split(separator: "&").filter {
            $0.prefix { $0 != "=" } != "ns"
        }
        parameters.append("ns=\(namespace)")
        return "\(request.uri.path)?" + parameters.joined(separator: "&")
    }
}
