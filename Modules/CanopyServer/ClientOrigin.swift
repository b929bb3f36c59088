import NIOCore

/// Where a request comes from, as the server tells its client: the client's address and the
/// scheme it used. Read from `X-Forwarded-For` and `X-Forwarded-Proto` only when the TCP peer is
/// a trusted proxy (``ServerConfiguration/trustedProxies``); from anyone else those headers are
/// ignored, so a client cannot pass itself off as another address or as having used TLS.
///
/// `X-Forwarded-For` is read as the usual algorithm has it: from the right (the hop nearest this
/// server), trusted proxies are skipped; the first address that is not a trusted proxy is the
/// client. `X-Forwarded-Proto` is the last value the trusted peer set.
///
/// ```swift
/// // peer 10.0.0.5 (a trusted proxy), X-Forwarded-For: 198.51.100.7, X-Forwarded-Proto: https
/// ClientOrigin(peer: "10.0.0.5", forwarded: headers, trustedProxies: [try IPNetwork(parsing: "10.0.0.0/8")])
/// // address "198.51.100.7", scheme "https"
/// ```
struct ClientOrigin: Sendable, Equatable, CustomStringConvertible {
    /// The client's IP address (`"?"` when the socket has none, as a Unix socket).
    let address: String
    /// `https` or `http`: what the client used to reach the first trusted hop.
    let scheme: String

    /// - Parameters:
    ///   - peer: the TCP peer's address.
    ///   - servesTLS: whether this server's own socket speaks TLS (the scheme without a proxy).
    init(peer: String?, forwarded: ForwardedHeaders, trustedProxies: [IPNetwork], servesTLS: Bool = false) {
        let ownScheme = servesTLS ? "https" : "http"
        guard let peer else {
            (address, scheme) = ("?", ownScheme)
            return
        }
        func isTrusted(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address: address) } }
        guard isTrusted(peer) else {
            (address, scheme) = (peer, ownScheme)
            return
        }
        var client = peer
        for hop in forwarded.forwardedFor.reversed() {
            // An entry that is no address (garbled, or "unknown") ends the walk at the hop that added it.
            guard IPNetwork.addressBytes(hop) != nil else { break }
            client = hop
            if !isTrusted(hop) { break }
        }
        address = client
        switch forwarded.forwardedProto?.lowercased() {
        case "https"?: scheme = "https"
        case "http"?: scheme = "http"
        default: scheme = ownScheme
        }
    }

    /// The address for a log line.
    var description: String { address }
}

/// The forwarding headers of a request, as received.
struct ForwardedHeaders: Sendable, Equatable {
    /// Every address of every `X-Forwarded-For` header, left to right.
    let forwardedFor: [String]
    /// The last value of the last `X-Forwarded-Proto` header.
    let forwardedProto: String?

    static let none = ForwardedHeaders(forwardedFor: [], forwardedProto: nil)

    static let forwardedForName = "X-Forwarded-For"
    static let forwardedProtoName = "X-Forwarded-Proto"

    init(forwardedFor: [String], forwardedProto: String?) {
        self.forwardedFor = forwardedFor
        self.forwardedProto = forwardedProto
    }

    /// Reads the header values as they came (`X-Forwarded-For` values in order).
    init(forwardedForValues: some Sequence<String>, forwardedProtoValues: some Sequence<String>) {
        func items(_ values: some Sequence<String>) -> [String] {
            values.flatMap { $0.split(separator: ",") }.map {
                String($0.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
            }.filter { !$0.isEmpty }
        }
        self.init(forwardedFor: items(forwardedForValues), forwardedProto: items(forwardedProtoValues).last)
    }
}

extension SocketAddress {
    /// The IP address alone, without the port (`nil` for a Unix socket).
    var clientAddress: String? { ipAddress }
}
