import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Transport

/// What one load connection does with the messages it receives. It runs on the connection's event
/// loop, so a session keeps plain mutable state and answers without any task switch: the load
/// generator must cost far less per message than the server it measures.
protocol LoadSession: AnyObject {
    /// One complete realtime message (the hello included). Writes go out at the end of the read.
    func received(_ message: String, output: inout LoadOutput)
    /// The connection closed (by either side).
    func closed()
}

/// Messages a session queues during one read; they are written with one flush.
struct LoadOutput {
    fileprivate(set) var messages: [String] = []
    fileprivate(set) var close = false

    mutating func send(_ text: String) { messages.append(text) }
    mutating func closeConnection() { close = true }
}

/// One realtime-protocol WebSocket connection of the load generator, on raw SwiftNIO.
final class LoadConnection: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `ws://host:port/uri` and hands every message to the session made by `makeSession`.
    static func connect(
        host: String, port: Int, uri: String, group: any EventLoopGroup,
        makeSession: @escaping @Sendable () -> any LoadSession
    ) async throws -> LoadConnection {
        let upgraded = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(
                        maxFrameSize: 1 << 24,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(
                                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16,
                                        maxAccumulatedFrameSize: 1 << 24))
                                let encoder = try channel.pipeline.syncOperations.context(
                                    handlerType: WebSocketFrameEncoder.self)
                                try channel.pipeline.syncOperations.addHandler(
                                    LoadHandler(session: makeSession(), framedOutput: encoder))
                                return true
                            }
                        })
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: "\(host):\(port)")
                    headers.add(name: "Content-Length", value: "0")
                    let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: headers)
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration<Bool>(
                        upgradeRequestHead: head, upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(false) })
                    var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                    // The server's hello can arrive in the same read as its 101 response: keep those bytes.
                    pipeline.leftOverBytesStrategy = .forwardBytes
                    let result = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: pipeline)
                    return result.map { ($0, channel) }
                }
            }
        let (didUpgrade, channel) = try await upgraded.get()
        guard didUpgrade else {
            try? await channel.close()
            throw LoadError.notUpgraded("ws://\(host):\(port)\(uri)")
        }
        return LoadConnection(channel: channel)
    }

    /// Sends one message from outside the event loop.
    func send(_ text: String) {
        let channel = channel
        channel.eventLoop.execute {
            // Framed like the sessions' messages, then written past NIO's frame encoder.
            guard let encoder = try? channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
            else { return }
            var masks = MaskGenerator()
            let frames = MaskedFrames.encode([text], allocator: channel.allocator, masks: &masks)
            encoder.writeAndFlush(NIOAny(frames), promise: nil)
        }
    }

    func close() { channel.close(promise: nil) }
}

enum LoadError: Error, CustomStringConvertible {
    case notUpgraded(String)

    var description: String {
        switch self {
        case .notUpgraded(let url): "\(url) did not accept the WebSocket upgrade"
        }
    }
}

/// Joins frames into messages for the session, answers pings, writes what the session queued.
private final class LoadHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let session: any LoadSession
    /// The context of the pipeline's `WebSocketFrameEncoder`: writes made on it skip the encoder, so
    /// frames this handler already encoded (``MaskedFrames``) go straight to the socket.
    private let framedOutput: ChannelHandlerContext
    private var assembler = FrameAssembler()
    private var output = LoadOutput()
    private var writeScheduled = false
    /// Masking keys for this connection's frames; seeded from the system generator once, since
    /// asking the system for every frame's key costs more than the rest of the send.
    private var masks = MaskGenerator()

    init(session: any LoadSession, framedOutput: ChannelHandlerContext) {
        self.session = session
        self.framedOutput = framedOutput
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            guard case .message(let text)? = try? assembler.append(String(buffer: frame.unmaskedData)) else { return }
            session.received(text, output: &output)
            // Written at the end of this read, or by a task of this loop tick if no read-complete follows
            // (the first messages can arrive together with the upgrade response).
            if !writeScheduled, !output.messages.isEmpty || output.close {
                writeScheduled = true
                let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
                context.eventLoop.execute { bound.value.handler.writeOutput(context: bound.value.context) }
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        writeOutput(context: context)
        context.fireChannelReadComplete()
    }

    private func writeOutput(context: ChannelHandlerContext) {
        writeScheduled = false
        guard !output.messages.isEmpty || output.close else { return }
        let frames = MaskedFrames.encode(output.messages, allocator: context.channel.allocator, masks: &masks)
        framedOutput.write(NIOAny(frames), promise: nil)
        context.flush()
        output.messages.removeAll(keepingCapacity: true)
        if output.close { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Client-to-server WebSocket text frames, masked as RFC 6455 requires of a client, encoded into
/// one buffer for one write (NIO's encoder writes each frame apart and masks byte by byte).
enum MaskedFrames {
    static func encode(_ messages: [String], allocator: ByteBufferAllocator, masks: inout MaskGenerator) -> ByteBuffer {
        var output = allocator.buffer(capacity: messages.reduce(0) { $0 + $1.utf8.count + 14 })
        for message in messages {
            if FrameAssembler.fitsOneFrame(message) {
                append(message, to: &output, key: UInt32(truncatingIfNeeded: masks.next()))
                continue
            }
            for piece in FrameAssembler.frames(for: message) {
                append(piece, to: &output, key: UInt32(truncatingIfNeeded: masks.next()))
            }
        }
        return output
    }

    /// Appends one final, masked text frame holding `text`.
    static func append(_ text: String, to output: inout ByteBuffer, key: UInt32) {
        let length = text.utf8.count
        output.writeInteger(UInt8(0x81))
        switch length {
        case ..<126:
            output.writeInteger(UInt8(0x80 | length))
        case ..<65536:
            output.writeInteger(UInt8(0x80 | 126))
            output.writeInteger(UInt16(length))
        default:
            output.writeInteger(UInt8(0x80 | 127))
            output.writeInteger(UInt64(length))
        }
        output.writeInteger(key)
        var text = text
        text.withUTF8 { utf8 in
            _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: utf8.count) { target in
                let bytes = withUnsafeBytes(of: key.bigEndian) { ($0[0], $0[1], $0[2], $0[3]) }
                WebSocketMasking.apply(key: bytes, from: UnsafeRawBufferPointer(utf8), to: target)
                return utf8.count
            }
        }
    }
}

/// A fast generator (xorshift64*) for WebSocket masking keys, seeded from the system's.
struct MaskGenerator: RandomNumberGenerator {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next() | 1
    }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}

/// Helpers to read fields out of message texts without parsing them (a plain UTF-8 byte search:
/// `String.range(of:)` goes through Foundation and cost the load generator a tenth of its time).
enum MessageText {
    static func isHello(_ text: String) -> Bool { offset(after: #""t":"h""#, in: text) != nil }

    /// The request number of a response text (`{"t":"d","d":{"b":...,"r":N}}`).
    static func responseNumber(_ text: String) -> Int? {
        integer(after: #""r":"#, in: text).map { Int($0) }
    }

    /// The integer after `marker` in `text` (used to carry send times inside pushed values).
    static func integer(after marker: String, in text: String) -> UInt64? {
        var text = text
        return text.withUTF8 { bytes -> UInt64? in
            guard var index = offset(after: marker, in: bytes) else { return nil }
            var number: UInt64 = 0
            var sawDigit = false
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                number = number * 10 + UInt64(bytes[index] - 48)
                sawDigit = true
                index += 1
            }
            return sawDigit ? number : nil
        }
    }

    private static func offset(after marker: String, in text: String) -> Int? {
        var text = text
        return text.withUTF8 { offset(after: marker, in: $0) }
    }

    /// The offset just past the first occurrence of `marker` in `bytes`.
    private static func offset(after marker: String, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var marker = marker
        return marker.withUTF8 { offset(after: $0, in: bytes) }
    }

    private static func offset(after pattern: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Int?
    {
        guard let first = pattern.first, bytes.count >= pattern.count else { return nil }
        var start = 0
        while start <= bytes.count - pattern.count {
            if bytes[start] == first {
                var matched = 1
                while matched < pattern.count, bytes[start + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return start + pattern.count }
            }
            start += 1
        }
        return nil
    }
}
