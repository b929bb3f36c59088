import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// The server's child channel: HTTP/1.1 for REST and event streams, or, for a WebSocket upgrade at
/// `/.ws`, the realtime protocol served by a ``RealtimeChannelHandler`` on the channel's own event
/// loop.
///
/// Unlike Hummingbird's WebSocket channel, an upgraded connection keeps no task, async stream or
/// writer of its own while it is idle: its handler reacts to frames as NIO reads them, and outbound
/// messages are written in batches with one flush. That is what keeps an idle connection small and
/// fan-out cheap.
struct RealtimeUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        /// The realtime handlers are installed; nothing more to do in a task.
        case realtime
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    /// What each realtime session is made with.
    let realtime: RealtimeContext
    let origins: OriginResolver

    init(realtime: RealtimeContext, origins: OriginResolver, responder: @escaping HTTPChannelHandler.Responder) {
        self.realtime = realtime
        self.origins = origins
        self.responder = Self.redirectingLateUpgrades(responder)
    }

    /// The largest message (and HTTP body) served.
    private var maxMessageBytes: Int { realtime.limits.maxMessageBytes }

    /// WebSocket frames above this size are refused by the decoder; messages are capped more
    /// precisely by ``FrameAssembler``.
    var maxFrameBytes: Int { max(1 << 20, min(maxMessageBytes, 1 << 24)) }

    /// Each connection keeps its last receive buffer for the next read, at the size the reads have
    /// needed: NIO's default starts at 2 KB, which an idle connection would hold for good after an
    /// upgrade request of a few hundred bytes. Starting at 256 bytes, a busy connection's buffer still
    /// doubles on each full read up to 64 KB.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffers)
            let upgradeAttempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let framing = RequestFramingMeter(maxChunkBytes: maxMessageBytes)
            let errorHandler = HTTPErrorHandler(framing: framing, maxBodyBytes: maxMessageBytes)
            let httpOnlyHandlers = NIOLoopBound((framing, errorHandler), eventLoop: channel.eventLoop)
            let (realtime, origins) = (self.realtime, self.origins)
            let maxFrameBytes = self.maxFrameBytes
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                // The realtime handler reads and checks frames itself, and fails the connection
                // with the matching close code.
                maxFrameSize: maxFrameBytes, enableAutomaticErrorHandling: false,
                shouldUpgrade: { channel, head in
                    upgradeAttempted.value = true
                    let isRealtime = head.uri == "/.ws" || head.uri.hasPrefix("/.ws?")
                    if isRealtime {
                        // The error handler reads HTTP parts and would meet WebSocket frames; it has
                        // already checked this request's key and version. The meter may be handing
                        // on this request out of a read that holds frames too: it passes those on,
                        // then goes.
                        let (framing, errorHandler) = httpOnlyHandlers.value
                        channel.pipeline.syncOperations.removeHandler(errorHandler, promise: nil)
                        framing.passThrough()
                        channel.eventLoop.assumeIsolated().execute {
                            channel.pipeline.syncOperations.removeHandler(framing, promise: nil)
                        }
                    }
                    return channel.eventLoop.makeSucceededFuture(isRealtime ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        let parameters = Self.queryParameters(of: head.uri)
                        let requestHost = head.headers["Host"].first
                        // The realtime handler reads the frames from the bytes itself: it goes
                        // before NIO's frame decoder, added by the upgrade, which is removed (on
                        // the next tick) and meanwhile never given a byte.
                        let decoder = try channel.pipeline.syncOperations.context(
                            handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self)
                        let origin = origins.origin(
                            peer: channel.remoteAddress, forwarded: ForwardedHeaders(head.headers))
                        let client = RealtimeClientInfo(
                            address: origin.address, protocolVersion: parameters["v"],
                            userAgent: head.headers["User-Agent"].first, pageOrigin: head.headers["Origin"].first,
                            host: requestHost)
                        try channel.pipeline.syncOperations.addHandler(
                            RealtimeChannelHandler(
                                context: realtime, parameters: parameters, requestHost: requestHost,
                                origin: origin, client: client, maxFrameBytes: maxFrameBytes),
                            position: .before(decoder.handler))
                        channel.pipeline.syncOperations.removeHandler(context: decoder, promise: nil)
                        return UpgradeResult.realtime
                    }
                }
            )
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            HTTP1ToHTTPServerCodec(secure: origins.servesTLS))
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true))
                        return upgradeAttempted.value ? UpgradeResult.failedUpgrade(http) : .notUpgraded(http)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(
                upgradeConfiguration: upgrade)
            configuration.enablePipelining = false
            // HTTPErrorHandler takes the place of NIO's, which answers every parser error with an
            // empty 400.
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                configuration: configuration)
            let decoder = try channel.pipeline.syncOperations.handler(
                type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(framing, position: .before(decoder))
            try channel.pipeline.syncOperations.addHandler(errorHandler, position: .after(decoder))
            return Value(upgradeResult: result, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .realtime: return
            case .notUpgraded(let http): await handleHTTP(asyncChannel: http, logger: logger)
            case .failedUpgrade(let http): await Self.refuseUpgrade(http, logger: logger)
            }
        } catch {
            logger.debug("connection ended before its first request", metadata: ["error": "\(error)"])
        }
    }

    /// Answers an upgrade this server does not serve (a WebSocket to another path) with 400.
    private static func refuseUpgrade(_ http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async
    {
        let refusal = HTTPRefusal(status: .badRequest, message: "WebSocket upgrades are served at /.ws only")
        let (nioHead, body) = refusal.response(allocator: ByteBufferAllocator())
        var head = HTTPResponse(status: .badRequest)
        for header in nioHead.headers {
            if let name = HTTPField.Name(header.name) {
                head.headerFields.append(HTTPField(name: name, value: header.value))
            }
        }
        do {
            try await http.executeThenClose { _, outbound in
                try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
            }
        } catch {
            logger.trace("could not answer a refused upgrade", metadata: ["error": "\(error)"])
        }
    }

    /// The parameters of a request target's query, percent-decoded.
    static func queryParameters(of target: String) -> [String: String] {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return [:] }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            parameters[name] = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
        }
        return parameters
    }

    /// NIO upgrades only on a connection's first request. A client asking for a WebSocket later on
    /// a kept-alive connection is redirected to the same URL and the connection closed, so that it
    /// retries on a new one (as Hummingbird's WebSocket channel does).
    private static func redirectingLateUpgrades(
        _ responder: @escaping HTTPChannelHandler.Responder
    ) -> HTTPChannelHandler.Responder {
        struct LateUpgradeRedirected: Error {}
        return { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                return try await responder(request, writer, channel)
            }
            let location = request.uri.query.map { "\(request.uri.path)?\($0)" } ?? request.uri.path
            try await writer.writeResponse(
                HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: location]))
            throw LateUpgradeRedirected()
        }
    }
}
