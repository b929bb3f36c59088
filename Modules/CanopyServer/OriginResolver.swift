import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// Tells where a request or connection comes from (see ``ClientOrigin``): its peer, or, behind a
/// trusted proxy, the client that proxy names.
struct OriginResolver: Sendable {
    /// The peers whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed
    /// (``ServerConfiguration/trustedProxies``).
    let trustedProxies: [IPNetwork]
    /// Whether this server's own socket speaks TLS (the scheme without a proxy).
    let servesTLS: Bool

    /// Where `request`, received on `channel`, comes from.
    func origin(of request: Request, channel: any Channel) -> ClientOrigin {
        origin(peer: channel.remoteAddress, forwarded: ForwardedHeaders(request.headers))
    }

    /// Where a connection from `peer` comes from, given its request's forwarding headers.
    func origin(peer: SocketAddress?, forwarded: ForwardedHeaders) -> ClientOrigin {
        ClientOrigin(
            peer: peer?.clientAddress, forwarded: forwarded, trustedProxies: trustedProxies, servesTLS: servesTLS)
    }
}

extension ForwardedHeaders {
    /// The forwarding headers of a Hummingbird request.
    init(_ headers: HTTPFields) {
        self.init(
            forwardedForValues: HTTPField.Name(Self.forwardedForName).map { headers[values: $0] } ?? [],
            forwardedProtoValues: HTTPField.Name(Self.forwardedProtoName).map { headers[values: $0] } ?? [])
    }

    /// The forwarding headers of a WebSocket upgrade request.
    init(_ headers: HTTPHeaders) {
        self.init(
            forwardedForValues: headers[Self.forwardedForName],
            forwardedProtoValues: headers[Self.forwardedProtoName])
    }
}
