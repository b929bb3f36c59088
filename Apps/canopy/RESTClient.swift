import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import RealtimeClientSocket
import Transport
import Tree

/// The REST API of one database (PROTOCOL.md, "REST"): every request carries the namespace and the
/// token, and every failure becomes a ``CLIError`` that names the request and the server's answer.
struct RESTClient: Sendable {
    /// `http[s]://host:port`.
    let base: String
    let namespace: String?
    let token: String?
    /// Seconds a request may take, from connecting to the end of its answer.
    let timeout: Double
    private let http: HTTPClient
    /// Which certificates an `https://` server may present, to explain a refusal.
    private let trust: TLSTrust
    /// Logs each request at debug level (`CANOPY_LOG_LEVEL=debug`).
    private let logger = Logger(label: "canopy.rest")

    init(
        base: String, namespace: String?, token: String?, timeout: Double, tls: TLSConfiguration? = nil,
        trust: TLSTrust = .system
    ) {
        self.base = base
        self.namespace = namespace
        self.token = token
        self.timeout = timeout
        self.trust = trust
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        // Fail at once when the server is not there, instead of retrying until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .milliseconds(Int64(timeout * 1000)))
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// Closes the connections (AsyncHTTPClient requires it before the client goes away).
    func shutdown() async { try? await http.shutdown() }

    /// A location of the database or the rules document.
    enum Target: Sendable, CustomStringConvertible {
        case data(Path)
        case rules

        var description: String {
            switch self {
            case .data(let path): path.description
            case .rules: "/.settings/rules"
            }
        }

        /// The URL path: `/a/b.json`, each key percent-encoded.
        var urlPath: String {
            switch self {
            case .rules: return "/.settings/rules.json"
            case .data(let path):
                let keys = path.components.map { $0.string.addingPercentEncoding(withAllowedCharacters: .unreserved) }
                return "/" + keys.map { $0 ?? "" }.joined(separator: "/") + ".json"
            }
        }
    }

    /// The URL of `target` with `parameters` (values sent as given, percent-encoded) and `ns=`.
    func url(_ target: Target, _ parameters: [(String, String)]) -> String {
        var pairs = namespace.map { [("ns", $0)] } ?? []
        pairs += parameters
        let query = pairs.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: .unreserved) ?? value)"
        }
        return base + target.urlPath + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// Sends a request and returns the answer once its head arrived; a status other than 2xx
    /// throws the ``CLIError`` it stands for.
    func send(
        _ method: HTTPMethod, _ target: Target, parameters: [(String, String)] = [], body: ByteBuffer? = nil
    ) async throws(CLIError) -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url(target, parameters))
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        let what = "\(method.rawValue) \(target)"
        logger.debug("\(method.rawValue) \(request.url) (\(body?.readableBytes ?? 0) bytes)")
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
        } catch {
            throw Self.unreachable(error, base: base, what: what, timeout: timeout, trust: trust)
        }
        guard (200..<300).contains(response.status.code) else {
            let text = try? await response.body.collect(upTo: 1 << 20)
            throw Self.refusal(status: Int(response.status.code), body: text, what: what)
        }
        return response
    }

    /// Throws ``CLIError/unreachable(_:)`` when the server cannot be reached; any HTTP answer (to a
    /// shallow read of the root, sent without the token) will do.
    func checkReachable() async throws(CLIError) {
        let request = HTTPClientRequest(url: url(.data(.root), [("shallow", "true")]))
        do {
            let response = try await http.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            _ = try? await response.body.collect(upTo: 1 << 20)
        } catch {
            throw Self.unreachable(error, base: base, what: "GET /", timeout: timeout, trust: trust)
        }
    }

    /// Sends a request and collects the answer's body, at most `limit` bytes; `nil` when it is longer.
    func fetch(
        _ method: HTTPMethod, _ target: Target, parameters: [(String, String)] = [], body: ByteBuffer? = nil,
        limit: Int
    ) async throws(CLIError) -> ByteBuffer? {
        let response = try await send(method, target, parameters: parameters, body: body)
        do {
            return try await response.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            return nil
        } catch {
            throw Self.unreachable(
                error, base: base, what: "\(method.rawValue) \(target)", timeout: timeout, trust: trust)
        }
    }

    /// Sends a request and collects the answer, which must be at most `limit` bytes.
    func answer(
        _ method: HTTPMethod, _ target: Target, parameters: [(String, String)] = [], body: ByteBuffer? = nil,
        limit: Int = 256 << 20
    ) async throws(CLIError) -> ByteBuffer {
        guard let buffer = try await fetch(method, target, parameters: parameters, body: body, limit: limit) else {
            throw .failed(
                "the answer to \(method.rawValue) \(target) is over \(ByteCount(limit)); use 'canopy export' for "
                    + "large data")
        }
        return buffer
    }

    /// The error a transport failure stands for; a refused TLS certificate says so, and why.
    static func unreachable(
        _ error: any Error, base: String, what: String, timeout: Double, trust: TLSTrust = .system
    ) -> CLIError {
        let seconds = String(format: "%g", timeout)
        if case RealtimeClientError.certificateRefused(let reason) = error {
            return .unreachable("certificate refused: \(reason)")
        }
        if let components = URLComponents(string: base), let host = components.host,
            let reason = trust.refusal(
                of: error, host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host,
                port: components.port ?? 443)
        {
            return .unreachable("certificate refused: \(reason)")
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout:
                return .unreachable("server unreachable: no connection to \(base) within \(seconds) s")
            case .deadlineExceeded, .readTimeout:
                return .unreachable("server unreachable: \(what) had no answer from \(base) within \(seconds) s")
            default: break
            }
        }
        let reason = String(describing: error)
        if reason.contains("refused") {
            return .unreachable("server unreachable: \(base) refused the connection (is canopy-server running?)")
        }
        return .unreachable("server unreachable: \(what) to \(base) failed: \(reason)")
    }

    /// The error an HTTP status other than 2xx stands for, with the server's `{"error": …}` message.
    static func refusal(status: Int, body: ByteBuffer?, what: String) -> CLIError {
        var message = body.map { String(buffer: $0) } ?? ""
        if let body, let json = try? JSONValue(parsing: Data(body.readableBytesView)),
            let text = json["error"]?.stringValue
        {
            message = text
        }
        let detail = message.isEmpty ? "HTTP \(status)" : "\(message) (HTTP \(status))"
        switch status {
        case 400, 413: return .invalidInput("\(what) refused: \(detail)")
        case 401, 403: return .permissionDenied("permission denied: \(what): \(detail)")
        case 404: return .notFound("not found: \(what): \(detail)")
        case 500...: return .unreachable("server error: \(what): \(detail)")
        default: return .failed("unexpected answer to \(what): \(detail)")
        }
    }
}

extension CharacterSet {
    /// RFC 3986 unreserved characters: everything else is percent-encoded.
    static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
