import Logging
import NIOCore
import NIOWebSocket
import Prometheus
import Query
import Synchronization
import Transport
import Tree

/// The I/O of one realtime-protocol connection: the messages its ``RealtimeSession`` sends, as
/// WebSocket frames, the close, reading paused and resumed, and the bytes it holds for a slow
/// reader.
///
/// Outbound messages may be queued from any thread; they are encoded as WebSocket frames into one
/// buffer per batch (``OutboundFrames``) and written on the channel's event loop with one flush.
/// Pushes come straight from the database: the connection is the ``Subscriber`` its session's
/// listens are registered with.
final class RealtimeConnection: Subscriber, FlushTarget {
    let subscriberID = SubscriberIDs.make()
    private let channel: any Channel
    /// The context of the pipeline's `WebSocketFrameEncoder`: writes made on it skip the encoder,
    /// so already framed bytes go straight to the socket.
    private let framedOutput: NIOLoopBound<ChannelHandlerContext>
    private let flushBatch: FlushBatch
    private let outbox = Mutex(Outbox())
    /// The server's limits (what a slow reader may make it hold), budget, metrics and log, shared by
    /// every connection.
    private let context: RealtimeContext
    /// Its session's id, for the log.
    private let sessionID: String
    /// Whether the connection holds enough unread bytes to count in the server's ``OutboundBudget``.
    private let countsInBudget = Atomic(false)
    /// Set once the close frame was written (read on the event loop by ``RealtimeChannelHandler``).
    private let closeSent = Atomic(false)
    /// The most bytes the socket holds unread while the channel is writable (its high water mark),
    /// or `nil` when it was not known: while that is under every limit of ``measureQueued()``,
    /// a flush that leaves the channel writable has nothing to measure.
    private let writableBound: Int?

    /// How long the socket stays open after the server's close frame for the peer's answering close
    /// frame; then it is closed anyway.
    static let closeHandshakeTimeout = TimeAmount.seconds(5)

    /// The smallest batch whose storage is kept for the next one.
    static let spareBatchCapacity = 8

    private struct Outbox {
        /// A push queued while nothing else was, written first: a connection that is sent one push
        /// per flush (a fan-out its loop keeps up with) queues it without an array.
        var firstPush: ByteBuffer?
        /// Messages queued after ``firstPush``, or all of them when the first was not a push.
        var pending: [OutboundMessage] = []
        /// The storage of the last written batch, reused for the next one; kept only for a connection
        /// that writes batches of ``spareBatchCapacity`` or more (an idle one keeps none).
        var spare: [OutboundMessage] = []
        var flushScheduled = false
        /// Set once the connection should close after what is pending was written.
        var closeCode: WebSocketErrorCode?
        /// Whether the socket stays open after the close frame until the peer answers it.
        var awaitsPeerClose = true
        /// Set once the close frame was written: nothing is written after it.
        var closeWritten = false
    }

    init(
        channel: any Channel, framedOutput: NIOLoopBound<ChannelHandlerContext>, sessionID: String,
        context: RealtimeContext
    ) {
        self.channel = channel
        self.framedOutput = framedOutput
        self.sessionID = sessionID
        flushBatch = context.flushBatches.batch(for: channel.eventLoop)
        self.context = context
        if channel.eventLoop.inEventLoop, let waterMark = try? channel.syncOptions?.getOption(.writeBufferWaterMark) {
            writableBound = waterMark.high
        } else {
            writableBound = nil
        }
    }

    // MARK: Inbound

    /// Stops reading from the socket (its session holds too many requests).
    func pauseReading() {
        try? channel.syncOptions?.setOption(.autoRead, value: false)
    }

    /// Reads again.
    func resumeReading() {
        let channel = channel
        channel.eventLoop.execute {
            try? channel.syncOptions?.setOption(.autoRead, value: true)
            channel.read()
        }
    }

    /// The socket closed: nothing more is written, what waited to be is dropped, and the
    /// connection no longer counts in the server's budget for slow readers.
    func channelClosed() {
        outbox.withLock { outbox in
            outbox.closeCode = outbox.closeCode ?? .goingAway
            outbox.closeWritten = true
            outbox.firstPush = nil
            outbox.pending.removeAll()
        }
        context.outboundBudget.remove(subscriberID)
    }

    // MARK: Outbound

    func deliver(_ push: Push) { enqueue(.frames(push.wireFrames)) }

    func revoke(path: Path, params: QueryParams) {
        enqueue(.message(.listenRevoked(path: path.wireString, query: params.wireObject)))
    }

    func send(_ message: ServerMessage) { enqueue(.message(message)) }

    func end() { closeAfterPendingMessages(code: .goingAway) }

    /// Closes the WebSocket (with `code`) once everything queued so far was written.
    ///
    /// The socket stays open after the close frame until the peer answers with its own (at most
    /// ``closeHandshakeTimeout``), as RFC 6455's closing handshake has it, so the peer reads what
    /// came before the close. A client whose connection was closed by the server the moment it was
    /// upgraded lost the hello and the close with it (HummingbirdWSClient: it then waited for its
    /// hello timeout). `awaitingPeer: false` closes the socket at once, for a peer that broke the
    /// protocol.
    func closeAfterPendingMessages(code: WebSocketErrorCode = .normalClosure, awaitingPeer: Bool = true) {
        let schedule = outbox.withLock { outbox -> Bool in
            if outbox.closeCode == nil {
                outbox.closeCode = code
                outbox.awaitsPeerClose = awaitingPeer
            }
            return scheduleFlush(&outbox)
        }
        if schedule { flushBatch.schedule(self) }
    }

    /// Whether the server's close frame was written; the peer's close frame then ends the socket.
    var hasSentClose: Bool { closeSent.load(ordering: .relaxed) }

    private func enqueue(_ message: consuming OutboundMessage) {
        // Moved into the queue, not copied: a push's frames are shared by every connection it goes
        // to, and a copy is a retain of their storage, released again at once from this thread
        // while the event loops release it as they write (each waiting for the other's change).
        var message = Optional(message)
        let schedule = outbox.withLock { outbox -> Bool in
            guard outbox.closeCode == nil, let message = message.take() else { return false }
            if outbox.firstPush == nil, outbox.pending.isEmpty, case .frames(let frames) = message {
                outbox.firstPush = frames
            } else {
                outbox.pending.append(message)
            }
            return scheduleFlush(&outbox)
        }
        if schedule { flushBatch.schedule(self) }
    }

    private func scheduleFlush(_ outbox: inout Outbox) -> Bool {
        if outbox.flushScheduled { return false }
        outbox.flushScheduled = true
        return true
    }

    /// Writes every queued message and flushes once (on the event loop).
    func flush() {
        let (firstPush, taken, closeCode, awaitsPeer) = outbox.withLock {
            outbox -> (ByteBuffer?, [OutboundMessage], WebSocketErrorCode?, Bool) in
            outbox.flushScheduled = false
            if outbox.closeWritten { return (nil, [], nil, false) }
            var batch: [OutboundMessage] = []
            swap(&batch, &outbox.spare)
            swap(&batch, &outbox.pending)
            if outbox.closeCode != nil { outbox.closeWritten = true }
            return (outbox.firstPush.take(), batch, outbox.closeCode, outbox.awaitsPeerClose)
        }
        var batch = taken
        if let firstPush, batch.isEmpty {
            // One push alone (a fan-out at a pace the loop keeps up with): its frames are written
            // as they are, shared with the other connections they go to, not copied.
            framedOutput.value.write(NIOAny(firstPush), promise: nil)
            context.metrics.bytesSent.increment(by: Int64(firstPush.readableBytes))
        } else if !batch.isEmpty {
            if let firstPush { batch.insert(.frames(firstPush), at: 0) }
            var bytes = 0
            for buffer in OutboundFrames.encode(batch, allocator: channel.allocator) {
                bytes += buffer.readableBytes
                framedOutput.value.write(NIOAny(buffer), promise: nil)
            }
            context.metrics.bytesSent.increment(by: Int64(bytes))
        }
        if batch.capacity >= Self.spareBatchCapacity {
            var spare = batch
            spare.removeAll(keepingCapacity: true)
            outbox.withLock { outbox in
                if outbox.spare.capacity < spare.capacity { outbox.spare = spare }
            }
        }
        if let closeCode {
            var data = channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: closeCode)
            channel.write(WebSocketFrame(fin: true, opcode: .connectionClose, data: data), promise: nil)
            channel.flush()
            closeSent.store(true, ordering: .relaxed)
            if awaitsPeer {
                let channel = channel
                channel.eventLoop.scheduleTask(in: Self.closeHandshakeTimeout) { channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            return
        }
        // Flushed from where the frames were written: no handler after it holds writes back.
        framedOutput.value.flush()
        if let writableBound, channel.isWritable, !countsInBudget.load(ordering: .relaxed),
            writableBound <= min(context.limits.maxPendingOutboundBytes, OutboundBudget.stallThreshold)
        {
            return
        }
        measureQueued()
    }

    /// What waits to be written: messages queued for the next flush, and the bytes the socket did
    /// not take. Read on the event loop, for the console's connections view.
    func waiting() async -> (messages: Int, bytes: Int) {
        let messages = outbox.withLock { $0.pending.count + ($0.firstPush == nil ? 0 : 1) }
        let channel = channel
        let bytes = try? await channel.eventLoop.submit {
            try channel.syncOptions?.getOption(.bufferedWritableBytes) ?? 0
        }.get()
        return (messages, bytes ?? 0)
    }

    /// What the socket did not take stays queued; a client that stops reading must not make it grow
    /// without bound, alone (``ServerConfiguration/maxPendingOutboundBytes``) or with others
    /// (``OutboundBudget``). Called on the event loop after each flush and when the socket drains.
    func measureQueued() {
        guard let queued = try? channel.syncOptions?.getOption(.bufferedWritableBytes) else { return }
        if queued > context.limits.maxPendingOutboundBytes {
            context.logger.warning(
                "closing a realtime connection that does not read what it is sent",
                metadata: ["session": "\(sessionID)", "queued_bytes": "\(queued)"])
            context.metrics.tripped(.pendingOutboundBytes)
            context.outboundBudget.remove(subscriberID)
            channel.close(promise: nil)
            return
        }
        guard queued > OutboundBudget.stallThreshold || countsInBudget.load(ordering: .relaxed) else { return }
        let (channel, logger, metrics, sessionID) = (channel, context.logger, context.metrics, sessionID)
        let counts = context.outboundBudget.record(subscriberID, bytes: queued) {
            logger.warning(
                "closing the realtime connection stalled for the longest: the server holds too much for slow readers",
                metadata: ["session": "\(sessionID)", "queued_bytes": "\(queued)"])
            metrics.tripped(.totalPendingOutboundBytes)
            channel.close(promise: nil)
        }
        countsInBudget.store(counts, ordering: .relaxed)
    }
}
