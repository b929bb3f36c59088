import NIOCore
import NIOWebSocket
import Transport

/// The end of a ``RealtimeSocket``'s pipeline: hands text frames to the delegate, answers pings,
/// completes close handshakes, and writes what the delegate queued, masked by hand into one
/// buffer (NIO's encoder writes each frame apart and masks byte by byte).
final class RealtimeSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = ByteBuffer

    private let delegate: any RealtimeSocketDelegate
    /// Failed, if the delegate has not completed it, when the connection ends.
    private let ready: EventLoopPromise<Void>
    private let url: String
    private let closeTimeout: TimeAmount
    private var output = RealtimeSocketOutput()
    private var writeScheduled = false
    /// Masking keys for this connection's frames; seeded from the system generator once, since
    /// asking the system for every frame's key costs more than the rest of the send.
    private var masks = WebSocketMaskKeys()
    private var context: ChannelHandlerContext?
    /// Whether this side sent a close frame (it then waits for the server's).
    private var sentClose = false
    private var reason: RealtimeSocketCloseReason?
    private var error: (any Error)?

    init(delegate: any RealtimeSocketDelegate, ready: EventLoopPromise<Void>, url: String, closeTimeout: TimeAmount) {
        self.delegate = delegate
        self.ready = ready
        self.url = url
        self.closeTimeout = closeTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // A connection that never came up (no channelInactive) ends here.
        ready.fail(RealtimeSocketError.endedBeforeReady(url: url, reason: reason ?? .lost(error)))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            delegate.received(frame.unmaskedData, output: &output)
            afterDelegate(context: context)
        case .binary:
            delegate.receivedBinary(frame.unmaskedData, output: &output)
            afterDelegate(context: context)
        case .ping:
            var pong = context.channel.allocator.buffer(capacity: frame.length + 14)
            frame.unmaskedData.withUnsafeReadableBytes {
                WebSocketMasking.appendClientFrame($0, opcode: 0x8A, key: masks.next(), to: &pong)
            }
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            receivedClose(frame.unmaskedData, context: context)
        default:
            break
        }
    }

    /// Applies what the delegate asked besides messages, and schedules the write of its output.
    private func afterDelegate(context: ChannelHandlerContext) {
        if output.stopsReading {
            output.stopsReading = false
            try? context.channel.syncOptions?.setOption(.autoRead, value: false)
        }
        // Written at the end of this read, or by a task of this loop tick if no read-complete
        // follows (the first frames can arrive together with the upgrade response).
        if !writeScheduled, !output.messages.isEmpty || output.isClosing {
            writeScheduled = true
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            context.eventLoop.execute { bound.value.handler.writeOutput(context: bound.value.context) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        writeOutput(context: context)
        context.fireChannelReadComplete()
    }

    private func writeOutput(context: ChannelHandlerContext) {
        writeScheduled = false
        guard !output.messages.isEmpty || output.isClosing else { return }
        if !output.messages.isEmpty {
            let frames = Self.encode(output.messages, allocator: context.channel.allocator, masks: &masks)
            context.writeAndFlush(wrapOutboundOut(frames), promise: nil)
            output.messages.removeAll(keepingCapacity: true)
        }
        if output.isClosing {
            output.isClosing = false
            if reason == nil { reason = .closedByClient }
            context.close(promise: nil)
        }
    }

    // MARK: From the socket's owner (on the event loop)

    /// Writes messages, each split into frames as needed.
    func write(_ messages: [String], promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.writeAndFlush(
            wrapOutboundOut(Self.encode(messages, allocator: context.channel.allocator, masks: &masks)),
            promise: promise)
    }

    /// Writes text frames exactly as given.
    func write(frames: [String], promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: frames.reduce(0) { $0 + $1.utf8.count + 14 })
        for frame in frames { Self.append(frame, to: &buffer, key: masks.next()) }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
    }

    /// Notes that this side is closing the connection (without a handshake).
    func closingByClient() {
        if reason == nil { reason = .closedByClient }
    }

    /// Sends a close frame (1000, normal closure) and closes the socket if the server has not
    /// answered within the close timeout.
    func startClosing() {
        guard let context, !sentClose else { return }
        sentClose = true
        if reason == nil { reason = .closedByClient }
        var frame = context.channel.allocator.buffer(capacity: 8)
        withUnsafeBytes(of: UInt16(1000).bigEndian) {
            WebSocketMasking.appendClientFrame($0, opcode: 0x88, key: masks.next(), to: &frame)
        }
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: closeTimeout) { channel.close(promise: nil) }
    }

    /// The server's close frame: answered with the same status code unless this side started the
    /// handshake, then the socket is closed.
    private func receivedClose(_ payload: ByteBuffer, context: ChannelHandlerContext) {
        var payload = payload
        let code = payload.readInteger(as: UInt16.self)
        if reason == nil {
            reason = .closeFrame(code: code, reason: payload.readString(length: payload.readableBytes) ?? "")
        }
        guard !sentClose else {
            context.close(promise: nil)
            return
        }
        sentClose = true
        var answer = context.channel.allocator.buffer(capacity: 8)
        if let code {
            withUnsafeBytes(of: code.bigEndian) {
                WebSocketMasking.appendClientFrame($0, opcode: 0x88, key: masks.next(), to: &answer)
            }
        } else {
            WebSocketMasking.appendClientFrame(
                UnsafeRawBufferPointer(start: nil, count: 0), opcode: 0x88, key: masks.next(), to: &answer)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: Ending

    func channelInactive(context: ChannelHandlerContext) {
        let reason = reason ?? .lost(error)
        delegate.closed(reason)
        ready.fail(RealtimeSocketError.endedBeforeReady(url: url, reason: reason))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if self.error == nil { self.error = error }
        context.close(promise: nil)
    }

    // MARK: Frames

    /// Client text frames for `messages`, masked as RFC 6455 requires of a client, in one buffer.
    static func encode(
        _ messages: [String], allocator: ByteBufferAllocator, masks: inout WebSocketMaskKeys
    ) -> ByteBuffer {
        var output = allocator.buffer(capacity: messages.reduce(0) { $0 + $1.utf8.count + 14 })
        for message in messages {
            if FrameAssembler.fitsOneFrame(message) {
                append(message, to: &output, key: masks.next())
                continue
            }
            for piece in FrameAssembler.frames(for: message) {
                append(piece, to: &output, key: masks.next())
            }
        }
        return output
    }

    /// Appends one final, masked text frame holding `text`.
    private static func append(_ text: String, to output: inout ByteBuffer, key: UInt32) {
        var text = text
        text.withUTF8 {
            WebSocketMasking.appendClientFrame(UnsafeRawBufferPointer($0), opcode: 0x81, key: key, to: &output)
        }
    }
}
