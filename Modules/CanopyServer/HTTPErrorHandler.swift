import NIOCore
import NIOHTTP1

/// Answers a request that cannot be served as HTTP with a status and a JSON error saying what was
/// wrong, then closes the connection: what NIO's decoder throws (mapped in
/// ``HTTPRefusal/init(parserError:inRequestLine:)``), what it lets through but Canopy refuses
/// (``HTTPRefusal/init(checking:requestLineEndsInBareLF:maxBodyBytes:)``), and the chunk sizes
/// ``RequestFramingMeter`` refuses. A request it lets through that expects `100-continue` (and has
/// a body) is answered `100 Continue` at once.
///
/// It sits where NIO's `HTTPServerProtocolErrorHandler` would, right after the decoder, and like
/// it passes errors on, so that a responder reading a body sees the body fail. After it has
/// answered, it drops everything else read or written on the connection.
final class HTTPErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Thrown to writers after the connection was refused.
    struct ConnectionRefused: Error {}

    private let framing: RequestFramingMeter
    private let maxBodyBytes: Int
    private var responseInProgress = false
    private var refused = false
    /// The method of the request being received, once its head arrived.
    private var method: HTTPMethod?

    init(framing: RequestFramingMeter, maxBodyBytes: Int) {
        self.framing = framing
        self.maxBodyBytes = maxBodyBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            method = head.method
            if let refusal = HTTPRefusal(
                checking: head, requestLineEndsInBareLF: framing.requestLineEndsInBareLF, maxBodyBytes: maxBodyBytes)
            {
                refuse(refusal, context: context)
                return
            }
            if Self.expectsContinue(head) {
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
        case .body:
            break
        case .end:
            method = nil
        }
        context.fireChannelRead(data)
    }

    /// Whether the client waits for `100 Continue` before it sends the body (RFC 9110 §10.1.1):
    /// an HTTP/1.1 request with a body that expects it.
    private static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        guard head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1),
            head.headers[canonicalForm: "Expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return false }
        let length = head.headers["Content-Length"].first.flatMap { Int($0) } ?? 0
        return length > 0 || head.headers.contains(name: "Transfer-Encoding")
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Once answered, the decoder's complaints about bytes that keep coming are expected.
        guard !refused else { return }
        if let refusal = error as? HTTPRefusal {
            refuse(refusal, context: context)
            context.fireErrorCaught(error)
            return
        }
        guard let parserError = error as? HTTPParserError,
            let refusal = HTTPRefusal(parserError: parserError, inRequestLine: framing.inRequestLine)
        else {
            context.fireErrorCaught(error)
            return
        }
        refuse(framing.requestLineEndsInBareLF ? .bareLineFeed : refusal, context: context)
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
        let bytes = refusal.serialized(allocator: channel.allocator, withBody: method != .HEAD)
        // Written below NIO's response encoder, which would take the body out of an answer to CONNECT.
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            channel.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
    }
}
