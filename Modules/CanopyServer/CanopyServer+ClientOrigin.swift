import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

extension CanopyServer {
    /// Where `request`, received on `channel`, comes from (see ``ClientOrigin``).
    func clientOrigin(of request: Request, channel: any Channel) -> ClientOrigin {
        clientOrigin(peer: channel.remoteAddress, forwarded: ForwardedHeaders(request.headers))
    }

    /// Where a connection from `peer` comes from, given its request's forwarding headers.
    func clientOrigin(peer: SocketAddress?, forwarded: ForwardedHeaders) -> ClientOrigin {
        ClientOrigin(
            peer: peer?.clientAddress, forwarded: forwarded, trustedProxies: configuration.trustedProxies,
            servesTLS: servesTLS)
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
