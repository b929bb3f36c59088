import NIOCore
import NIOHTTP1

/// Answers a request that cannot be served as HTTP with a status and a JSON error saying what was
/// wrong, then closes the connection: what NIO's decoder throws (mapped in
/// ``HTTPRefusal/init(parserError:inRequestLine:)``) and what it lets through but Canopy refuses
/// (``HTTPRefusal/init(checking:requestLineEndsInBareLF:)``).
///
/// It sits where NIO's `HTTPServerProtocolErrorHandler` would, right after the decoder, and like
/// it passes parser errors on, so that a responder reading a body sees the body fail. After it has
/// answered, it drops everything else read or written on the connection.
final class HTTPErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Thrown to writers after the connection was refused.
    struct ConnectionRefused: Error {}

    private let requestLine: RequestLineMeter
    private var responseInProgress = false
    private var refused = false

    init(requestLine: RequestLineMeter) {
        self.requestLine = requestLine
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let refusal = HTTPRefusal(checking: head, requestLineEndsInBareLF: requestLine.requestLineEndsInBareLF) {
                refuse(refusal, context: context)
                return
            }
        case .body:
            break
        case .end:
            requestLine.expectRequestLine()
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Once answered, the decoder's complaints about bytes that keep coming are expected.
        guard !refused else { return }
        guard let parserError = error as? HTTPParserError,
            let refusal = HTTPRefusal(parserError: parserError, inRequestLine: requestLine.inRequestLine)
        else {
            context.fireErrorCaught(error)
            return
        }
        refuse(requestLine.requestLineEndsInBareLF ? .bareLineFeed : refusal, context: context)
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !refused else {
            promise?.fail(ConnectionRefused())
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code < 200 && head.status != .switchingProtocols: break  // 100 Continue
        case .head: responseInProgress = true
        case .body: break
        case .end: responseInProgress = false
        }
        context.write(data, promise: promise)
    }

    private func refuse(_ refusal: HTTPRefusal, context: ChannelHandlerContext) {
        refused = true
        let channel = context.channel
        // Half a response already went out: all that is left is to stop.
        guard !responseInProgress else {
            channel.close(promise: nil)
            return
        }
        let (head, body) = refusal.response(allocator: channel.allocator)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
