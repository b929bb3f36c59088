import NIOCore
import NIOPosix
import NIOWebSocket
import RealtimeClientSocket
import Transport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The raw realtime connections of a storm, on SwiftNIO: a hand-made WebSocket upgrade, then a
/// handler that answers the hello with the client's two listens and counts their replies. It reads
/// message bytes without building strings, so that the client side stays a small part of what the
/// process spends (the server runs in the same process and is what the figures are about).
enum StormConnection {
    /// Connects `client` to `address` and requests the upgrade at `uri`. The connection reports to
    /// `client` from then on, its failure included.
    static func open(_ client: StormClient, to address: SocketAddress, request: ByteBuffer) {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(30))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        UpgradeHandler(request: request),
                        ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)),
                        ListenHandler(client: client),
                    ])
                }
            }
        bootstrap.connect(to: address).whenComplete { result in
            switch result {
            case .success(let channel): client.connected(channel)
            case .failure: client.failed()
            }
        }
    }

    /// The upgrade request every client sends (the key is fixed: the client does not check the answer).
    static func upgradeRequest(host: String, port: Int, uri: String) -> ByteBuffer {
        ByteBuffer(
            string: "GET \(uri) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    }

    /// Cuts `channel` as a dropped network path would: a TCP reset (`SO_LINGER` 0), no close handshake.
    static func abort(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// Writes the upgrade request once connected, skips the response's headers after checking for
/// `101`, then passes every later byte on (the hello may come in the same read as the headers).
private final class UpgradeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: ByteBuffer
    private var response: ByteBuffer?
    private var isUpgraded = false

    init(request: ByteBuffer) { self.request = request }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isUpgraded else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        response.setOrWriteBuffer(&bytes)
        guard var response else { return }
        let view = response.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10] as [UInt8]) else {
            if response.readableBytes > 16384 { context.close(promise: nil) }
            return
        }
        guard view.starts(with: "HTTP/1.1 101".utf8) else {
            context.close(promise: nil)
            return
        }
        isUpgraded = true
        response.moveReaderIndex(to: end.upperBound)
        self.response = nil
        if response.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(response)) }
    }
}

/// Sends the client's listens when the server's hello comes, counts their `ok` replies, answers
/// pings, and tells the client when the connection closes.
private final class ListenHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = ByteBuffer

    private let client: StormClient
    private var answered: Set<Int> = []
    private var masks = WebSocketMaskKeys()

    init(client: StormClient) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            received(frame.unmaskedData, context: context)
        case .ping:
            var pong = context.channel.allocator.buffer(capacity: frame.length + 8)
            frame.unmaskedData.withUnsafeReadableBytes {
                WebSocketMasking.appendClientFrame($0, opcode: 0x8A, key: masks.next(), to: &pong)
            }
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    private func received(_ message: ByteBuffer, context: ChannelHandlerContext) {
        let bytes = message.readableBytesView
        if bytes.contains(Pattern.hello) {
            var output = context.channel.allocator.buffer(capacity: client.listens.reduce(0) { $0 + $1.count + 8 })
            for listen in client.listens {
                listen.withUnsafeBytes {
                    WebSocketMasking.appendClientFrame($0, opcode: 0x81, key: masks.next(), to: &output)
                }
            }
            context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        } else if bytes.contains(Pattern.dataPush) || bytes.contains(Pattern.mergePush) {
            client.storm.counters.dataPushed()
        } else if let number = bytes.integer(after: Pattern.requestNumber), bytes.contains(Pattern.ok) {
            if answered.insert(number).inserted, answered.count == client.listens.count { client.restored() }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Byte patterns of the server messages a storm client tells apart (keys as the server writes them).
private enum Pattern {
    static let hello = Array(#""t":"h""#.utf8)
    static let dataPush = Array(#""a":"d""#.utf8)
    static let mergePush = Array(#""a":"m""#.utf8)
    static let requestNumber = Array(#""r":"#.utf8)
    static let ok = Array(#""s":"ok""#.utf8)
}

extension ByteBufferView {
    fileprivate func contains(_ pattern: [UInt8]) -> Bool { firstRange(of: pattern) != nil }

    /// The decimal number right after `pattern`, if there is one.
    fileprivate func integer(after pattern: [UInt8]) -> Int? {
        guard var index = firstRange(of: pattern)?.upperBound else { return nil }
        var number = 0
        let start = index
        while index < endIndex, (48...57).contains(self[index]) {
            number = number * 10 + Int(self[index] - 48)
            index += 1
        }
        return index > start ? number : nil
    }
}
