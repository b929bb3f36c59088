import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
public import Tree

/// An HTTP method for ``TestServer/http(_:_:headers:body:timeout:)`` (so tests need not import NIO).
public enum TestHTTPMethod: String, Sendable {
    case GET, PUT, PATCH, POST, DELETE, HEAD, OPTIONS, TRACE
}

/// A whole HTTP response.
public struct TestHTTPResponse: Sendable {
    public var status: Int
    /// Header fields in the order received (names as sent).
    public var headers: [(name: String, value: String)]
    public var body: String

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body parsed as JSON, or `nil` when it is not JSON.
    public var json: JSONValue? { try? JSONValue(parsing: body) }
}

extension TestServer {
    /// A client that hands redirects back instead of following them, so that tests see what the
    /// server answered (HTTPClient.shared follows them).
    private static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// Sends one HTTP request to `target` (a path with an optional query string, for example
    /// `/users.json?orderBy=%22$key%22`) and reads the whole response.
    public func http(
        _ method: TestHTTPMethod, _ target: String, headers: [(String, String)] = [], body: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> TestHTTPResponse {
        try await Self.http(baseURL: baseURL, method, target, headers: headers, body: body, timeout: timeout)
    }

    /// Sends one HTTP request to `baseURL + target` (any server, for example a ``ServerProcess``);
    /// a redirect is returned, not followed.
    public static func http(
        baseURL: String, _ method: TestHTTPMethod, _ target: String, headers: [(String, String)] = [],
        body: String? = nil, timeout: Duration = .seconds(30)
    ) async throws -> TestHTTPResponse {
        let request = makeRequest(baseURL + target, method, headers: headers, body: body)
        let response = try await client.execute(request, timeout: .init(timeout))
        let bytes = try await response.body.collect(upTo: 1 << 28)
        return TestHTTPResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: String(buffer: bytes))
    }

    /// Opens an event stream (`GET` with `Accept: text/event-stream`) at `target`.
    public func eventStream(_ target: String, headers: [(String, String)] = []) async throws -> EventStreamReader {
        try await Self.eventStream(baseURL: baseURL, target, headers: headers)
    }

    /// Opens an event stream at `baseURL + target` (any server, for example a ``ServerProcess``).
    public static func eventStream(
        baseURL: String, _ target: String, headers: [(String, String)] = []
    ) async throws -> EventStreamReader {
        let request = makeRequest(
            baseURL + target, .GET, headers: [("Accept", "text/event-stream")] + headers, body: nil)
        let response = try await client.execute(request, timeout: .minutes(10))
        return EventStreamReader(response: response)
    }

    private static func makeRequest(
        _ url: String, _ method: TestHTTPMethod, headers: [(String, String)], body: String?
    ) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method.rawValue)
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        return request
    }

    /// A query string from name/value pairs: values are percent-encoded except for characters that
    /// are safe in a query, `+` included (clients send JSON values with a raw `+`, which the
    /// server must not read as a space).
    ///
    /// ```swift
    /// TestServer.query(["orderBy": "\"$key\"", "limitToFirst": "2"])  // ?orderBy=%22$key%22&limitToFirst=2
    /// ```
    public static func query(_ parameters: KeyValuePairs<String, String>) -> String {
        let allowed = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+$:,")
        let pairs = parameters.map { name, value in
            let encoded = value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
            return "\(name)=\(encoded)"
        }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
