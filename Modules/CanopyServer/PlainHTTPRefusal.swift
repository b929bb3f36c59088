import NIOCore

/// First on a TLS port's connections: a connection whose first byte begins a TLS handshake record
/// (`0x16`) is handed on and this handler leaves; anything else (a plain HTTP request, `ws://`) is
/// answered `400` with a JSON error saying to use `https://` or `wss://`, and closed.
///
/// Its output is closed first and what the client still sends is read and dropped until it closes
/// (or ``lingerTime`` passes): closing with unread bytes would reset the connection, and the client
/// could lose the answer.
final class PlainHTTPRefusal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The first byte of a TLS record carrying a handshake message (RFC 8446, 5.1).
    static let handshakeRecord: UInt8 = 0x16
    static let lingerTime: TimeAmount = .seconds(5)

    static let message = "this port serves TLS only: use https:// (or wss:// for the realtime protocol)"

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        if first == Self.handshakeRecord {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        refused = true
        let body = #"{"error":"\#(Self.message)"}"#
        let response =
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\n"
            + "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n\(body)"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: response)), promise: nil)
        context.close(mode: .output, promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if refused, case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
