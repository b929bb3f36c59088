import Foundation

/// Where a client connects: `ws[s]://host:port/.ws?v=5&ns=namespace[&ls=lastSession]`.
///
/// ```swift
/// let endpoint = try RealtimeEndpoint(url: "http://127.0.0.1:9000?ns=demo")
/// endpoint.webSocketURL(lastSession: nil)   // "ws://127.0.0.1:9000/.ws?v=5&ns=demo"
/// try RealtimeEndpoint(url: "https://demo.example.com").namespace   // "demo" (port 443, wss)
/// ```
public struct RealtimeEndpoint: Sendable, Hashable {
    /// The server's host name or IP address (an IPv6 address without brackets).
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// Whether the connection uses TLS (`wss`).
    public var secure: Bool
    /// The database on the server (`ns=`).
    public var namespace: String

    public init(host: String, port: Int, secure: Bool, namespace: String) {
        self.host = host
        self.port = port
        self.secure = secure
        self.namespace = namespace
    }

    /// Reads a database URL: `http://127.0.0.1:9000?ns=demo`, `https://demo.example.com`,
    /// `ws://…` or `wss://…`, at the root (a path other than `/` or `/.ws` is refused).
    ///
    /// The namespace is `?ns=` if present, else the host's first label when the host is a domain
    /// name with a dot (not an IP address or `localhost`), else `"default"`. The port defaults to
    /// 80, or 443 for `https` and `wss`.
    ///
    /// ```swift
    /// try RealtimeEndpoint(url: "http://localhost:9000").namespace       // "default"
    /// try RealtimeEndpoint(url: "ftp://example.com")   // throws .invalidURL(_, reason: "unsupported scheme \"ftp\"…")
    /// ```
    public init(url: String) throws(RealtimeClientError) {
        func refuse(_ reason: String) -> RealtimeClientError { .invalidURL(url, reason: reason) }
        let trimmed = url.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw refuse("empty URL") }
        guard let components = URLComponents(string: trimmed) else {
            throw refuse("not a URL")
        }
        guard let scheme = components.scheme?.lowercased() else {
            throw refuse("no scheme (use http, https, ws or wss)")
        }
        switch scheme {
        case "http", "ws": secure = false
        case "https", "wss": secure = true
        default: throw refuse("unsupported scheme \"\(scheme)\" (use http, https, ws or wss)")
        }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw refuse("no host") }
        self.host = host
        if let port = components.port {
            guard (1...65535).contains(port) else { throw refuse("port \(port) is outside 1...65535") }
            self.port = port
        } else {
            port = secure ? 443 : 80
        }
        guard ["", "/", "/.ws"].contains(components.path) else {
            throw refuse("a database URL names the server's root, not the path \"\(components.path)\"")
        }
        if let item = components.queryItems?.last(where: { $0.name == "ns" }) {
            guard let namespace = item.value, !namespace.isEmpty else { throw refuse("empty namespace in ns=") }
            self.namespace = namespace
        } else {
            namespace = Self.namespace(fromHost: host)
        }
    }

    /// This endpoint on another server, `host` or `host:port` as a server's `r` (reset) message
    /// names it, keeping the scheme and namespace; `nil` when `host` is not a valid host.
    ///
    /// ```swift
    /// try RealtimeEndpoint(url: "http://a:9000?ns=demo").redirected(to: "b:9001")   // b, 9001, demo
    /// ```
    public func redirected(to host: String) -> RealtimeEndpoint? {
        guard !host.isEmpty, !host.contains("/"), !host.contains("?"), !host.contains("#"), !host.contains("@"),
            var endpoint = try? RealtimeEndpoint(url: "\(secure ? "https" : "http")://\(host)")
        else { return nil }
        endpoint.namespace = namespace
        return endpoint
    }

    /// The namespace a host name implies: its first label, for a domain name with a dot.
    private static func namespace(fromHost host: String) -> String {
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        let isIPv4 = labels.count == 4 && labels.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }
        let isIPv6 = host.contains(":")
        guard labels.count > 1, !isIPv4, !isIPv6, host.lowercased() != "localhost", let first = labels.first,
            !first.isEmpty
        else { return "default" }
        return String(first)
    }

    /// The WebSocket URL, with `ls=` when `lastSession` is given.
    ///
    /// ```swift
    /// RealtimeEndpoint(host: "::1", port: 9000, secure: false, namespace: "demo")
    ///     .webSocketURL(lastSession: "abc")   // "ws://[::1]:9000/.ws?v=5&ns=demo&ls=abc"
    /// ```
    public func webSocketURL(lastSession: String?) -> String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "wss" : "ws")://\(hostPart):\(port)" + webSocketTarget(lastSession: lastSession)
    }

    /// The WebSocket URL's path and query, with `ls=` when `lastSession` is given.
    ///
    /// ```swift
    /// RealtimeEndpoint(host: "::1", port: 9000, secure: false, namespace: "demo")
    ///     .webSocketTarget(lastSession: nil)   // "/.ws?v=5&ns=demo"
    /// ```
    public func webSocketTarget(lastSession: String?) -> String {
        var target = "/.ws?v=5&ns=\(Self.queryEncoded(namespace))"
        if let lastSession { target += "&ls=\(Self.queryEncoded(lastSession))" }
        return target
    }

    /// `text` with every byte but unreserved URL characters percent-encoded.
    private static func queryEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, Character(scalar).isUnreservedURLCharacter {
                encoded.unicodeScalars.append(scalar)
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return encoded
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }

    fileprivate var isUnreservedURLCharacter: Bool {
        isASCII && (isLetter || isNumber || self == "-" || self == "." || self == "_" || self == "~")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
