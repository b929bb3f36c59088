public import NIOCore

/// The client's half of an HTTP/1.1 exchange of which only the response's head matters (a
/// WebSocket upgrade, an event stream): writes the request once connected, waits for the end of
/// the response's headers, checks the status line (and a header, if asked), then passes every
/// later byte on (the server's first frames or events may arrive in the same read as its headers).
///
/// ```swift
/// let headRead = channel.eventLoop.makePromise(of: Void.self)
/// try channel.pipeline.syncOperations.addHandler(
///     ResponseHeadHandler(request: "GET /a.json HTTP/1.1\r\n…\r\n\r\n", expectedStatus: 200, headRead: headRead))
/// ```
public final class ResponseHeadHandler: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// The longest head read before giving up.
    static let maxHeadBytes = 16384

    private let request: ByteBuffer
    private let expectedStatus: Int
    private let requiredHeader: (name: String, value: String)?
    private let headRead: EventLoopPromise<Void>
    private let timeout: TimeAmount?
    private var timer: Scheduled<Void>?
    private var response: ByteBuffer?
    private var isDone = false

    /// `headRead` succeeds once a head with `expectedStatus` (and `requiredHeader`, whose name is
    /// compared without case) was read, and fails with ``ResponseHeadError`` otherwise, or when no
    /// head came within `timeout` of the connection opening (then the connection is closed).
    public init(
        request: String, expectedStatus: Int, requiredHeader: (name: String, value: String)? = nil,
        timeout: TimeAmount? = nil, headRead: EventLoopPromise<Void>
    ) {
        self.request = ByteBuffer(string: request)
        self.expectedStatus = expectedStatus
        self.requiredHeader = requiredHeader
        self.timeout = timeout
        self.headRead = headRead
    }

    public func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
        if let timeout {
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                bound.value.handler.fail(bound.value.context, .noHeadWithin(timeout))
            }
        }
        context.fireChannelActive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isDone else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        response.setOrWriteBuffer(&bytes)
        guard var response else { return }
        let view = response.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10] as [UInt8]) else {
            if response.readableBytes > Self.maxHeadBytes { fail(context, .noEndOfHead(limit: Self.maxHeadBytes)) }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let statusLine = head.prefix { $0 != "\r" }
        guard statusLine.hasPrefix("HTTP/1.1 \(expectedStatus)") else {
            fail(context, .unexpectedStatus(String(statusLine)))
            return
        }
        if let requiredHeader, Self.value(of: requiredHeader.name, in: head).map(String.init) != requiredHeader.value {
            fail(context, .missingHeader(name: requiredHeader.name, expected: requiredHeader.value))
            return
        }
        isDone = true
        timer?.cancel()
        response.moveReaderIndex(to: end.upperBound)
        self.response = nil
        headRead.succeed(())
        if response.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(response)) }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        failIfNotDone(.closedBeforeHead)
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        failIfNotDone(.closedBeforeHead)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isDone else {
            context.fireErrorCaught(error)
            return
        }
        isDone = true
        timer?.cancel()
        headRead.fail(error)
        context.close(promise: nil)
    }

    private func failIfNotDone(_ error: ResponseHeadError) {
        guard !isDone else { return }
        isDone = true
        timer?.cancel()
        headRead.fail(error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: ResponseHeadError) {
        guard !isDone else { return }
        isDone = true
        timer?.cancel()
        headRead.fail(error)
        context.close(promise: nil)
    }

    /// The value of header `name` (compared without case) in `head`, spaces around it trimmed.
    private static func value(of name: String, in head: String) -> Substring? {
        let name = name.lowercased()
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name else { continue }
            return line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
        }
        return nil
    }
}

/// Why a ``ResponseHeadHandler`` did not get the response head it expected.
public enum ResponseHeadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status line (`HTTP/1.1 404 Not Found`) did not have the expected status.
    case unexpectedStatus(String)
    /// The head lacked the header, or had another value.
    case missingHeader(name: String, expected: String)
    /// The connection closed before the end of the head.
    case closedBeforeHead
    /// No end of the head within `limit` bytes.
    case noEndOfHead(limit: Int)
    /// No head within the time given.
    case noHeadWithin(TimeAmount)

    public var description: String {
        switch self {
        case .unexpectedStatus(let line): "unexpected HTTP response: \(line)"
        case .missingHeader(let name, let expected): "unexpected HTTP response: no \(name): \(expected)"
        case .closedBeforeHead: "unexpected HTTP response: the connection closed before the response's head"
        case .noEndOfHead(let limit): "unexpected HTTP response: no end of headers in \(limit / 1024) KB"
        case .noHeadWithin(let timeout): "no HTTP response within \(Duration.nanoseconds(timeout.nanoseconds))"
        }
    }
}
