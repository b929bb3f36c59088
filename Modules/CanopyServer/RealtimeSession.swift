import Foundation
import Logging
import NIOCore
import NIOWebSocket
import Presence
import Prometheus
import Synchronization
import Transport
import Tree

/// One realtime client's session: its namespace, its requests handled in arrival order and
/// answered, who it acts as, and its onDisconnect operations (``ConnectionPresence``).
///
/// Requests are handled one after another by a task that exists only while some are waiting, so
/// an idle session costs no task. What it sends goes through its ``RealtimeConnection``, which does
/// the I/O; what it needs of the server comes in its ``RealtimeContext``.
final class RealtimeSession: Sendable {
    let id: String
    let connection: RealtimeConnection
    /// Who the session acts as, and its onDisconnect operations.
    let presence: ConnectionPresence<Caller>
    let context: RealtimeContext
    private let inbox = Mutex(Inbox())
    private let credential = Mutex(Credential())

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
        /// Held from the hello until the session's onDisconnect writes were handed over.
        var lease: DatabaseLease?
    }

    private struct Credential {
        /// The timer that ends the current credential, if it expires.
        var expiry: Task<Void, Never>?
        /// Set once the onDisconnect operations were handed over: no timer is kept any more.
        var ended = false
    }

    /// What the client said of itself when it connected.
    let client: RealtimeClientInfo
    private let reportedSDK = Mutex<String?>(nil)

    init(
        channel: any Channel, framedOutput: NIOLoopBound<ChannelHandlerContext>, context: RealtimeContext,
        client: RealtimeClientInfo = RealtimeClientInfo()
    ) {
        self.client = client
        id = Self.makeSessionID()
        self.context = context
        connection = RealtimeConnection(channel: channel, framedOutput: framedOutput, sessionID: id, context: context)
        presence = ConnectionPresence(session: id, identity: .unauthenticated)
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

    /// The id its listens are registered under (its connection's, which receives their pushes).
    var subscriberID: Int { connection.subscriberID }

    /// The SDK the client named in its stats (`s`) request, as `sdk.js.10-14-1`; `nil` until then.
    var sdk: String? { reportedSDK.withLock { $0 } }

    func reportSDK(_ sdk: String) {
        reportedSDK.withLock { $0 = sdk }
    }

    /// Who the session acts as now.
    var caller: Caller { presence.identity }

    /// Whether its onDisconnect operations were taken to run: its requests are no longer handled.
    var isRetired: Bool { presence.isRetired }

    // MARK: Opening

    /// Greets the client and opens its namespace; requests that arrive meanwhile wait in order.
    /// A reconnect naming its previous session (`ls`) ends that session first.
    ///
    /// In a cluster (PostgreSQL) the namespace is opened before the hello: when another process
    /// serves it, the client is sent that process's host in the protocol's redirect (`r`) instead of
    /// a hello, as Firebase's servers do, and the official clients reconnect there at once.
    /// `origin` says who the client is, for the log.
    func open(parameters: [String: String], requestHost: String? = nil, origin: ClientOrigin? = nil) {
        context.metrics.connections.increment()
        context.connections.realtimeOpened()
        let namespace = parameters["ns"].flatMap { $0.isEmpty ? nil : $0 } ?? context.defaultNamespace
        context.logger.debug(
            "realtime connection opened",
            metadata: [
                "session": "\(id)", "namespace": "\(namespace)", "client": "\(origin?.address ?? "?")",
                "scheme": "\(origin?.scheme ?? "?")",
            ])
        let redirects = context.redirects
        let helloHost = context.advertisedHost(requestHost)
        if !redirects { sendHello(host: helloHost) }
        Task {
            let lease: DatabaseLease
            do throws(DatabaseRegistry.LookupError) {
                lease = try await context.databases.lease(namespace)
            } catch {
                if redirects, case .servedElsewhere(_, let node, let host?) = error {
                    context.logger.debug(
                        "redirected a realtime client", metadata: ["namespace": "\(namespace)", "node": "\(node)"])
                    connection.send(.reset(host: host))
                } else {
                    if redirects { sendHello(host: helloHost) }
                    connection.send(.error(Self.refusal(of: namespace, error)))
                }
                connection.closeAfterPendingMessages()
                await dropRequestsAndDrain()
                return
            }
            if redirects { sendHello(host: helloHost) }
            if let last = parameters["ls"], !last.isEmpty { await context.sessions.end(last) }
            let database = lease.database
            guard context.sessions.add(self, database: database) else {
                lease.release()
                connection.closeAfterPendingMessages(code: .goingAway)
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
    /// already arrived must still be handled), for a session that serves no namespace.
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
        connection.send(
            .hello(
                timestamp: Int64(Database.now()), version: "5", host: host, sessionID: id,
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

    // MARK: Inbound

    /// Queues one assembled message (called on the event loop, in arrival order). Past
    /// ``ServerConfiguration/maxPendingRequestBytes`` of requests waiting, the connection stops
    /// reading until they were handled.
    func receive(_ text: String) {
        let highWater = context.limits.maxPendingRequestBytes
        let pause = inbox.withLock { inbox -> Bool in
            inbox.queuedBytes += text.utf8.count
            guard inbox.queuedBytes > highWater, !inbox.readingPaused else { return false }
            inbox.readingPaused = true
            return true
        }
        enqueue(.message(text))
        if pause {
            context.metrics.tripped(.pendingRequestBytes)
            connection.pauseReading()
        }
    }

    /// Reads again once the requests that paused reading were handled (after each batch).
    private func resumeReadingIfHandled() {
        let resume = inbox.withLock { inbox -> Bool in
            guard inbox.readingPaused, inbox.queuedBytes == 0 else { return false }
            inbox.readingPaused = false
            return true
        }
        if resume { connection.resumeReading() }
    }

    /// The socket closed: nothing more is written, and the session ends once the requests that
    /// came before were handled.
    func channelClosed() {
        connection.channelClosed()
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

    /// Handles what waits in the inbox until it is empty; the database sees its requests come
    /// over the realtime protocol (``RequestTransport``).
    private func drain(database: Database?) async {
        await RequestTransport.$current.withValue(.realtime) { await drainInbox(database: database) }
    }

    private func drainInbox(database: Database?) async {
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
                    if let database, !texts.isEmpty { await handle(texts, database: database) }
                    await end(database: database)
                    // Nothing more is read after the close; the inbox stays "draining" for good.
                    return
                }
            }
            if let database, !isRetired { await handle(texts, database: database) }
            batch.removeAll(keepingCapacity: true)
            resumeReadingIfHandled()
        }
    }

    // MARK: Ending

    /// The socket closed and what came before was handled: the onDisconnect writes are handed over
    /// and the session's listens, lease and place among the open connections go.
    private func end(database: Database?) async {
        if let database {
            // Findable by its id until its writes were handed over, so that a reconnect naming it
            // waits for them; counted open until then too.
            await handOver(to: database)
            context.sessions.remove(self)
            await database.dropListensAndUncount(subscriberID)
        } else {
            context.sessions.remove(self)
            context.metrics.connections.decrement()
        }
        inbox.withLock { $0.lease }?.release()
        context.connections.realtimeClosed()
    }

    /// Runs the onDisconnect operations on `database`, once, whoever asks first: the session's end
    /// or a newer session naming it (``SessionRegistry/end(_:)``). Every caller returns once they
    /// were handed over; the credential's expiry timer, if any, is stopped.
    func handOver(to database: Database) async {
        await presence.run(on: database)
        credential.withLock { credential in
            credential.ended = true
            credential.expiry?.cancel()
            credential.expiry = nil
        }
    }

    // MARK: Credentials

    /// Acts as `caller` from now on (until `expiresAt`, when the client is sent `ac` with
    /// `expired_token` and the session is unauthenticated again); listens the rules no longer
    /// allow it are revoked, and its onDisconnect operations will run as `caller`.
    func setCaller(_ caller: Caller, expiresAt: Date?, database: Database) async {
        let identification = presence.identify(as: caller)
        credential.withLock { credential in
            credential.expiry?.cancel()
            credential.expiry = nil
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
        credential.withLock { credential in
            if !credential.ended, presence.isCurrent(identification) {
                credential.expiry = timer
            } else {
                timer.cancel()
            }
        }
    }

    private func expire(_ identification: Int, database: Database) async {
        guard presence.replace(identification, with: .unauthenticated) else { return }
        connection.send(.authRevoked(status: .expiredToken, reason: "Auth token is expired."))
        await database.reauthenticate(subscriberID, as: .unauthenticated)
        await presence.keep(on: database)
    }
}
