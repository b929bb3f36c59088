import NIOCore
import NIOPosix

/// What one Redis connection does with the values it receives. Like ``LoadSession``, it runs on the
/// connection's event loop and keeps plain mutable state.
protocol RESPSession: AnyObject {
    /// The connection is open: queue the first commands on `output`.
    func opened(output: inout [[String]])
    /// One complete value: a reply, or a pushed pub/sub message. Commands queued on `output` are
    /// written at the end of the read.
    func received(_ value: RESPValue, output: inout [[String]])
    /// The connection closed (by either side).
    func closed()
}

/// One connection to a Redis server speaking RESP2 over raw SwiftNIO (no Redis client library):
/// the Redis side of `fanout --baseline redis`, built like ``LoadConnection`` so that both sides
/// cost the load generator about the same per message.
final class RESPConnection: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `host:port`; the session made by `makeSession` gets every value.
    static func connect(
        host: String, port: Int, group: any EventLoopGroup, makeSession: @escaping @Sendable () -> any RESPSession
    ) async throws -> RESPConnection {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RESPHandler(session: makeSession()))
                }
            }
            .connect(host: host, port: port).get()
        return RESPConnection(channel: channel)
    }

    /// Sends commands from outside the event loop, in one write.
    func send(_ commands: [[String]]) {
        let channel = channel
        channel.eventLoop.execute {
            var buffer = channel.allocator.buffer(capacity: 64 * commands.count)
            for command in commands { RESPValue.writeCommand(command, to: &buffer) }
            channel.writeAndFlush(buffer, promise: nil)
        }
    }

    func close() { channel.close(promise: nil) }
}

/// Decodes the bytes read into values for the session and writes the commands it queued, one
/// flush per read. It decodes in place rather than behind a `ByteToMessageHandler`: passing each
/// value down the pipeline cost a dynamic cast per message, a load-generator cost the Canopy side
/// does not pay for its bytes.
private final class RESPHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let session: any RESPSession
    private var output: [[String]] = []
    private var pending: ByteBuffer?
    private var decoder = RESPDecoder()

    init(session: any RESPSession) { self.session = session }

    func channelActive(context: ChannelHandlerContext) {
        session.opened(output: &output)
        writeOutput(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.setOrWriteBuffer(&bytes)
        guard var buffer = pending else { return }
        pending = nil
        do {
            while let value = try decoder.decode(buffer: &buffer) { session.received(value, output: &output) }
        } catch {
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        if buffer.readableBytes > 0 { pending = buffer }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        writeOutput(context: context)
        context.fireChannelReadComplete()
    }

    private func writeOutput(context: ChannelHandlerContext) {
        guard !output.isEmpty else { return }
        var buffer = context.channel.allocator.buffer(capacity: 64 * output.count)
        for command in output { RESPValue.writeCommand(command, to: &buffer) }
        output.removeAll(keepingCapacity: true)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
