import Foundation
import Logging
import NIOCore
import NIOWebSocket
import Presence
import Prometheus
import Query
import Synchronization
import Transport
import Tree

/// One realtime-protocol connection: its requests in arrival order, its outbound messages, and its
/// onDisconnect operations.
///
/// Requests are handled one after another by a task that exists only while some are waiting, so
/// an idle connection costs no task. Outbound messages may be queued from any thread; they are
/// encoded as WebSocket frames into one buffer per batch (``OutboundFrames``) and written on the
/// channel's event loop with one flush.
final class RealtimeConnection: Subscriber, FlushTarget {
    let subscriberID = SubscriberIDs.make()
    let sessionID: String
    private let channel: any Channel
    /// The context of the pipeline's `WebSocketFrameEncoder`: writes made on it skip the encoder,
    /// so already framed bytes go straight to the socket.
    private let framedOutput: NIOLoopBound<ChannelHandlerContext>
    private let server: CanopyServer
    private let flushBatch: FlushBatch
    private let outbox = Mutex(Outbox())
    private let inbox = Mutex(Inbox())
    private let state = Mutex(State())
    /// Whether the connection holds enough unread bytes to count in the server's ``OutboundBudget``.
    private let countsInBudget = Atomic(false)
    /// Set once the close frame was written (read on the event loop by ``RealtimeChannelHandler``).
    private let closeSent = Atomic(false)
    /// Who the connection acts as, and its onDisconnect operations.
    let presence: ConnectionPresence<Caller>

    /// How long the socket stays open after the server's close frame for the peer's answering close
    /// frame; then it is closed anyway.
    static let closeHandshakeTimeout = TimeAmount.seconds(5)

    private struct Outbox {
        var pending: [OutboundMessage] = []
        /// The storage of the last written batch, reused for the next one.
        var spare: [OutboundMessage] = []
        var flushScheduled = false
        /// Set once the connection should close after what is pending was written.
        var closeCode: WebSocketErrorCode?
        /// Whether the socket stays open after the close frame until the peer answers it.
        var awaitsPeerClose = true
        /// Set once the close frame was written: nothing is written after it.
        var closeWritten = false
    }

    private enum Inbound {
        case message(String)
        /// The socket closed: run the onDisconnect writes after the requests before it.
        case closed
    }

    private struct Inbox {
        var queue: [Inbound] = []
        /// Bytes of the requests in `queue`.
        var queuedBytes = 0
        /// Set while reading is paused because `queuedBytes` passed the high-water mark.
        var readingPaused = false
        var draining = true
        var database: Database?
        /// Held from the hello until the connection's onDisconnect writes were handed over.
        var lease: DatabaseLease?
    }

    private struct State {
        /// The timer that ends the current credential, if it expires.
        var expiry: Task<Void, Never>?
        /// Set once the connection ran its onDisconnect operations: no timer is kept any more.
        var retired = false
    }

    init(channel: any Channel, framedOutput: NIOLoopBound<ChannelHandlerContext>, server: CanopyServer) {
        self.channel = channel
        self.framedOutput = framedOutput
        self.server = server
        flushBatch = server.flushBatches.batch(for: channel.eventLoop)
        sessionID = Self.makeSessionID()
        presence = ConnectionPresence(session: sessionID, identity: .unauthenticated)
    }

    /// 32 random characters of `[a-zA-Z0-9]`, from four random words (a system call each, where one
    /// per character cost a reconnect storm about 5 % of the server's CPU).
    private static func makeSessionID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        var characters: [UInt8] = []
        characters.reserveCapacity(32)
        for _ in 0..<4 {
            // 8 characters of 62 use 48 bits of 64; the bias of `% 62` on 2^64 values is negligible.
            var word = generator.next()
            for _ in 0..<8 {
                characters.append(alphabet[Int(word % 62)])
                word /= 62
            }
        }
        return String(decoding: characters, as: UTF8.self)
    }

    // MARK: Inbound

    /// Greets the client and opens its namespace; requests that arrive meanwhile wait in order.
    /// A reconnect naming its previous session (`ls`) ends that session first.
    ///
    /// In a cluster (PostgreSQL) the namespace is opened before the hello: when another process
    /// serves it, the client is sent that process's host in the protocol's redirect (`r`) instead of
    /// a hello, as Firebase's servers do, and the official clients reconnect there at once.
    /// `origin` says who the client is, for the log.
    func open(parameters: [String: String], requestHost: String? = nil, origin: ClientOrigin? = nil) {
        server.metrics.connections.increment()
        server.connections.realtimeOpened()
        let namespace = parameters["ns"].flatMap { $0.isEmpty ? nil : $0 } ?? server.configuration.defaultNamespace
        server.logger.debug(
            "realtime connection opened",
            metadata: [
                "session": "\(sessionID)", "namespace": "\(namespace)", "client": "\(origin?.address ?? "?")",
                "scheme": "\(origin?.scheme ?? "?")",
            ])
        let redirects = server.configuration.postgresURL != nil
        let helloHost = server.advertisedHost(requestHost: requestHost)
        if !redirects { sendHello(host: helloHost) }
        Task {
            let lease: DatabaseLease
            do throws(DatabaseRegistry.LookupError) {
                lease = try await server.databases.lease(namespace)
            } catch {
                if redirects, case .servedElsewhere(_, let node, let host?) = error {
                    server.logger.debug(
                        "redirected a realtime client", metadata: ["namespace": "\(namespace)", "node": "\(node)"])
                    send(.reset(host: host))
                } else {
                    if redirects { sendHello(host: helloHost) }
                    send(.error(Self.refusal(of: namespace, error)))
                }
                closeAfterPendingMessages()
                await dropRequestsAndDrain()
                return
            }
            if redirects { sendHello(host: helloHost) }
            if let last = parameters["ls"], !last.isEmpty { await server.sessions.end(last) }
            let database = lease.database
            guard server.sessions.add(self, database: database) else {
                lease.release()
                closeAfterPendingMessages(code: .goingAway)
                await dropRequestsAndDrain()
                return
            }
            inbox.withLock { inbox in
                inbox.database = database
                inbox.lease = lease
            }
            await drain(database: database)
        }
    }

    /// Leaves the requests that arrived unanswered and handles what else came (a close that
    /// already arrived must still be handled), for a connection that serves no namespace.
    private func dropRequestsAndDrain() async {
        inbox.withLock { inbox in
            inbox.queue.removeAll {
                if case .message = $0 { return true }
                return false
            }
        }
        await drain(database: nil)
    }

    private func sendHello(host: String) {
        send(
            .hello(
                timestamp: Int64(Database.now()), version: "5", host: host, sessionID: sessionID,
                extensions: [RealtimeHello.writeIDsExtension]))
    }

    /// What a client whose namespace could not be opened is told.
    private static func refusal(of namespace: String, _ error: DatabaseRegistry.LookupError) -> String {
        switch error {
        case .invalidName: "invalid namespace \"\(namespace)\""
        case .unknown: "unknown namespace \"\(namespace)\""
        case .storage(let reason): "namespace \"\(namespace)\" could not be opened: \(reason)"
        case .tooManyOpen(let limit): "too many namespaces in use (at most \(limit)); try again later"
        case .servedElsewhere(_, let node, _): "namespace \"\(namespace)\" is served by \(node)"
        case .shuttingDown: "the server is shutting down"
        }
    }

    /// Queues one assembled message (called on the event loop, in arrival order). Past
    /// ``ServerConfiguration/maxPendingRequestBytes`` of requests waiting, the connection stops
    /// reading until they were handled.
    func receive(_ text: String) {
        let highWater = server.configuration.maxPendingRequestBytes
        let pause = inbox.withLock { inbox -> Bool in
            inbox.queuedBytes += text.utf8.count
            guard inbox.queuedBytes > highWater, !inbox.readingPaused else { return false }
            inbox.readingPaused = true
            return true
        }
        enqueue(.message(text))
        if pause {
            server.metrics.tripped(.pendingRequestBytes)
            try? channel.syncOptions?.setOption(.autoRead, value: false)
        }
    }

    /// Reads again once the requests that paused reading were handled (after each batch).
    private func resumeReadingIfHandled() {
        let resume = inbox.withLock { inbox -> Bool in
            guard inbox.readingPaused, inbox.queuedBytes == 0 else { return false }
            inbox.readingPaused = false
            return true
        }
        guard resume else { return }
        let channel = channel
        channel.eventLoop.execute {
            try? channel.syncOptions?.setOption(.autoRead, value: true)
            channel.read()
        }
    }

    /// The socket closed: nothing more is written, and what waited to be is dropped.
    func channelClosed() {
        outbox.withLock { outbox in
            outbox.closeCode = outbox.closeCode ?? .goingAway
            outbox.closeWritten = true
            outbox.pending.removeAll()
        }
        enqueue(.closed)
    }

    private func enqueue(_ item: Inbound) {
        let (start, database) = inbox.withLock { inbox -> (Bool, Database?) in
            inbox.queue.append(item)
            if inbox.draining { return (false, nil) }
            inbox.draining = true
            return (true, inbox.database)
        }
        guard start else { return }
        Task { await drain(database: database) }
    }

    private func drain(database: Database?) async {
        var batch: [Inbound] = []
        while true {
            inbox.withLock { inbox in
                swap(&batch, &inbox.queue)
                inbox.queuedBytes = 0
                if batch.isEmpty { inbox.draining = false }
            }
            if batch.isEmpty {
                resumeReadingIfHandled()
                return
            }
            var texts: [String] = []
            for item in batch {
                switch item {
                case .message(let text):
                    texts.append(text)
                case .closed:
                    if let database, !texts.isEmpty { await server.handle(texts, on: self, database: database) }
                    server.outboundBudget.remove(subscriberID)
                    if let database {
                        // Findable by its session until its writes were handed over, so that a
                        // reconnect naming it waits for them; counted open until then too.
                        await handOverDisconnectWrites(to: database)
                        server.sessions.remove(self)
                        await CanopyServer.dropListensAndUncount(subscriberID, in: database, metrics: server.metrics)
                    } else {
                        server.sessions.remove(self)
                        server.metrics.connections.decrement()
                    }
                    inbox.withLock { $0.lease }?.release()
                    server.connections.realtimeClosed()
                    // Nothing more is read after the close; the inbox stays "draining" for good.
                    return
                }
            }
            if let database, !isRetired { await server.handle(texts, on: self, database: database) }
            batch.removeAll(keepingCapacity: true)
            resumeReadingIfHandled()
        }
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

    private func enqueue(_ message: OutboundMessage) {
        let schedule = outbox.withLock { outbox -> Bool in
            guard outbox.closeCode == nil else { return false }
            outbox.pending.append(message)
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
        let (batch, closeCode, awaitsPeer) = outbox.withLock {
            outbox -> ([OutboundMessage], WebSocketErrorCode?, Bool) in
            outbox.flushScheduled = false
            if outbox.closeWritten { return ([], nil, false) }
            var batch: [OutboundMessage] = []
            swap(&batch, &outbox.spare)
            swap(&batch, &outbox.pending)
            if outbox.closeCode != nil { outbox.closeWritten = true }
            return (batch, outbox.closeCode, outbox.awaitsPeerClose)
        }
        if !batch.isEmpty {
            for buffer in OutboundFrames.encode(batch, allocator: channel.allocator) {
                framedOutput.value.write(NIOAny(buffer), promise: nil)
            }
        }
        var spare = batch
        spare.removeAll(keepingCapacity: true)
        outbox.withLock { outbox in
            if outbox.spare.capacity < spare.capacity { outbox.spare = spare }
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
        channel.flush()
        measureQueued()
    }

    /// What the socket did not take stays queued; a client that stops reading must not make it grow
    /// without bound, alone (``ServerConfiguration/maxPendingOutboundBytes``) or with others
    /// (``OutboundBudget``). Called on the event loop after each flush and when the socket drains.
    func measureQueued() {
        guard let queued = try? channel.syncOptions?.getOption(.bufferedWritableBytes) else { return }
        if queued > server.configuration.maxPendingOutboundBytes {
            server.logger.warning(
                "closing a realtime connection that does not read what it is sent",
                metadata: ["session": "\(sessionID)", "queued_bytes": "\(queued)"])
            server.metrics.tripped(.pendingOutboundBytes)
            server.outboundBudget.remove(subscriberID)
            channel.close(promise: nil)
            return
        }
        guard queued >= OutboundBudget.stallThreshold || countsInBudget.load(ordering: .relaxed) else { return }
        let (channel, server, sessionID) = (channel, server, sessionID)
        let counts = server.outboundBudget.record(subscriberID, bytes: queued) {
            server.logger.warning(
                "closing the realtime connection stalled for the longest: the server holds too much for slow readers",
                metadata: ["session": "\(sessionID)", "queued_bytes": "\(queued)"])
            server.metrics.tripped(.totalPendingOutboundBytes)
            channel.close(promise: nil)
        }
        countsInBudget.store(counts, ordering: .relaxed)
    }

    // MARK: Credentials

    /// Who the connection acts as now.
    var caller: Caller { presence.identity }

    /// Acts as `caller` from now on (until `expiresAt`, when the server sends `ac` with
    /// `expired_token` and the connection is unauthenticated again); listens the rules no longer
    /// allow it are revoked.
    func setCaller(_ caller: Caller, expiresAt: Date?, database: Database) async {
        let identification = presence.identify(as: caller)
        state.withLock { state in
            state.expiry?.cancel()
            state.expiry = nil
        }
        await database.reauthenticate(subscriberID, as: caller)
        await presence.keep(on: database)
        guard let expiresAt else { return }
        let timer = Task { [weak self] in
            let delay = expiresAt.timeIntervalSinceNow
            if delay > 0 { try? await Task.sleep(for: .milliseconds(Int64(delay * 1000))) }
            guard !Task.isCancelled, let self else { return }
            await self.expire(identification, database: database)
        }
        state.withLock { state in
            if !state.retired, presence.isCurrent(identification) { state.expiry = timer } else { timer.cancel() }
        }
    }

    private func expire(_ identification: Int, database: Database) async {
        guard presence.replace(identification, with: .unauthenticated) else { return }
        send(.authRevoked(status: .expiredToken, reason: "Auth token is expired."))
        await database.reauthenticate(subscriberID, as: .unauthenticated)
        await presence.keep(on: database)
    }

    // MARK: onDisconnect

    /// Runs the onDisconnect operations on `database`, once, whoever asks first: the connection's
    /// close or a newer connection naming its session (``SessionRegistry/end(_:)``). Every caller
    /// returns once they were handed over.
    func handOverDisconnectWrites(to database: Database) async {
        await presence.run(on: database)
        state.withLock { state in
            state.retired = true
            state.expiry?.cancel()
            state.expiry = nil
        }
    }

    var isRetired: Bool { presence.isRetired }
}

/// Live connections by session id, so that a reconnect naming its last session (`ls=`) can end
/// the old connection first.
final class SessionRegistry: Sendable {
    private struct State {
        var sessions: [String: (connection: RealtimeConnection, database: Database)] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Adds a connection whose namespace just opened; returns `false`, adding nothing, once
    /// ``closeAll()`` ran: a connection greeted before shutdown whose namespace opened after it
    /// would otherwise stay open on a stopped server.
    func add(_ connection: RealtimeConnection, database: Database) -> Bool {
        state.withLock { state in
            guard !state.isClosed else { return false }
            state.sessions[connection.sessionID] = (connection, database)
            return true
        }
    }

    /// The connection of session `id`, while it can be found by a reconnect naming it.
    func connection(_ id: String) -> RealtimeConnection? {
        state.withLock { $0.sessions[id]?.connection }
    }

    func remove(_ connection: RealtimeConnection) {
        _ = state.withLock { $0.sessions.removeValue(forKey: connection.sessionID) }
    }

    /// Closes every live connection (`going away`), as shutdown does, and every one added later;
    /// each runs its onDisconnect writes as it closes.
    func closeAll() {
        let open = state.withLock { state in
            state.isClosed = true
            return Array(state.sessions.values)
        }
        for (connection, _) in open { connection.closeAfterPendingMessages(code: .goingAway) }
    }

    /// Closes every live connection to `database` (`going away`): its namespace moved to another
    /// server, where the clients reconnect.
    func closeAll(using database: Database) {
        let using = state.withLock { state in state.sessions.values.filter { $0.database === database } }
        for (connection, _) in using { connection.closeAfterPendingMessages(code: .goingAway) }
    }

    /// Ends session `id`: runs its onDisconnect writes now (or waits for them, when its socket
    /// closed and it is already running them), stops its listens and closes it.
    ///
    /// It is closed with a plain close frame, not control `s`: the official clients take `s` as
    /// "shut down for good" and stop reconnecting, which would stop the newer connection too.
    func end(_ id: String) async {
        guard let (connection, database) = state.withLock({ $0.sessions[id] }) else { return }
        await connection.handOverDisconnectWrites(to: database)
        remove(connection)
        await database.removeSubscriber(connection.subscriberID)
        connection.closeAfterPendingMessages(code: .goingAway)
    }
}
