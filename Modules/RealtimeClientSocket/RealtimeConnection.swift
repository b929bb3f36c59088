import Logging
import NIOCore
import NIOSSL
import Synchronization
import Transport
import Tree

/// The running side of one ``RealtimeClient``: a ``RealtimeSocket`` whose frames it joins and
/// decodes into the client's message stream, after checking that the first is a hello, and which
/// it sends keepalives on.
///
/// It is the socket's delegate: frames arrive on the socket's event loop; the client's calls come
/// from any task, so the state it shares with them is behind a lock.
final class RealtimeConnection: RealtimeSocketDelegate, Sendable {
    private struct State {
        var reason: RealtimeClientError?
        var isFinished = false
        var isGreeted = false
        var lastSent = ContinuousClock.now
        /// The socket, once upgraded.
        var socket: RealtimeSocket?
        var assembler = FrameAssembler()
        var keepalive: Task<Void, Never>?
        /// When the hello is due: set by ``start(tlsConfiguration:timeout:refusal:)`` before the
        /// connect and upgrade, whose own timers therefore end no sooner.
        var helloDeadline: ContinuousClock.Instant?
    }

    /// How long a close handshake may take before the socket is dropped.
    static let closeTimeout: Duration = .seconds(5)
    /// The largest WebSocket message read (a protocol frame holds at most 16,384 characters).
    static let maxWebSocketMessageBytes = 1 << 24

    let endpoint: RealtimeEndpoint
    let url: String
    private let target: String
    let keepaliveInterval: Duration
    let logger: Logger
    let messages: AsyncStream<ServerMessage>
    private let messageSink: AsyncStream<ServerMessage>.Continuation
    private let helloSignal: AsyncStream<Result<RealtimeHello, RealtimeClientError>>
    private let helloSink: AsyncStream<Result<RealtimeHello, RealtimeClientError>>.Continuation
    private let state = Mutex(State())

    init(endpoint: RealtimeEndpoint, lastSession: String?, keepaliveInterval: Duration, logger: Logger) {
        self.endpoint = endpoint
        url = endpoint.webSocketURL(lastSession: lastSession)
        target = endpoint.webSocketTarget(lastSession: lastSession)
        self.keepaliveInterval = keepaliveInterval
        var logger = logger
        logger[metadataKey: "canopy.url"] = .string(url)
        self.logger = logger
        (messages, messageSink) = AsyncStream.makeStream()
        (helloSignal, helloSink) = AsyncStream.makeStream()
    }

    /// Why the connection ended, once it has.
    var endReason: RealtimeClientError? {
        state.withLock { $0.isFinished ? $0.reason : nil }
    }

    // MARK: Opening

    /// Starts connecting (with TLS when `tlsConfiguration` is given, the connect and the upgrade
    /// each bounded by `timeout`); `refusal` tells a failure that is the server's certificate being
    /// refused, and why.
    func start(
        tlsConfiguration: TLSConfiguration?, timeout: Duration, refusal: @escaping @Sendable (any Error) -> String?
    ) {
        let deadline = ContinuousClock.now + timeout
        state.withLock { $0.helloDeadline = deadline }
        Task { await self.run(tlsConfiguration: tlsConfiguration, timeout: timeout, refusal: refusal) }
    }

    /// Waits for the hello, until `timeout` after ``start(tlsConfiguration:timeout:refusal:)``; on
    /// timeout (or cancellation) abandons the connection and throws. A failure that comes at the
    /// deadline or after it is the timeout, whichever timer told it first (the connect's and the
    /// upgrade's have the same length and start later).
    func waitForHello(timeout: Duration) async throws(RealtimeClientError) -> RealtimeHello {
        let deadline = state.withLock { $0.helloDeadline } ?? ContinuousClock.now + timeout
        let outcome = await withTaskGroup(of: Result<RealtimeHello, RealtimeClientError>?.self) { group in
            group.addTask { [helloSignal] in
                for await result in helloSignal { return result }
                return nil
            }
            group.addTask { [url] in
                do {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    return .failure(.timedOut(timeout))
                } catch {
                    return .failure(.connectFailed("\(url): cancelled"))
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch outcome {
        case .success(let hello)?:
            return hello
        case .failure(let error)?:
            let error = ContinuousClock.now >= deadline ? .timedOut(timeout) : error
            abandon(error)
            throw error
        case nil:
            let ended = RealtimeClientError.connectFailed("\(url): the connection ended before the hello")
            let error = ContinuousClock.now >= deadline ? .timedOut(timeout) : ended
            abandon(error)
            throw error
        }
    }

    /// Ends a connection that is not wanted any more: a close handshake if it is upgraded (one
    /// still waiting for the upgrade is closed by the upgrade timeout).
    private func abandon(_ reason: RealtimeClientError) {
        end(reason)
        state.withLock { $0.socket }?.close()
    }

    // MARK: Running

    private func run(
        tlsConfiguration: TLSConfiguration?, timeout: Duration, refusal: @Sendable (any Error) -> String?
    ) async {
        var configuration = RealtimeSocket.Configuration()
        configuration.maxFrameSize = Self.maxWebSocketMessageBytes
        configuration.closeTimeout = .nanoseconds(Int64(Self.closeTimeout / .nanoseconds(1)))
        configuration.connectTimeout = .nanoseconds(Int64(timeout / .nanoseconds(1)))
        configuration.upgradeTimeout = configuration.connectTimeout
        do {
            let context = try tlsConfiguration.map { try NIOSSLContext(configuration: $0) }
            _ = try await RealtimeSocket.connect(
                host: endpoint.host, port: endpoint.port, target: target, tls: context, configuration: configuration
            ) { self }
        } catch RealtimeSocketError.cannotConnect(_, let cause), RealtimeSocketError.notUpgraded(_, let cause) {
            end(refusal(cause).map { .certificateRefused($0) } ?? .connectFailed("\(url): \(cause)"))
            finish()
            return
        } catch {
            end(.connectFailed("\(url): \(error)"))
            finish()
            return
        }
        let keepalive = Task { await self.sendKeepalives() }
        let isFinished = state.withLock { state in
            state.keepalive = keepalive
            return state.isFinished
        }
        if isFinished { keepalive.cancel() }
    }

    /// Sends a keepalive `"0"` whenever nothing was sent for ``keepaliveInterval``.
    private func sendKeepalives() async {
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (due, socket): (ContinuousClock.Instant?, RealtimeSocket?) = state.withLock { state in
                let due = state.lastSent + keepaliveInterval
                guard now >= due else { return (due, nil) }
                state.lastSent = now
                return (nil, state.socket)
            }
            if let due {
                do {
                    try await Task.sleep(until: due, clock: .continuous)
                } catch {
                    return
                }
            } else {
                socket?.send(frames: ["0"])
            }
        }
    }

    // MARK: From the socket (on its event loop)

    func opened(_ socket: RealtimeSocket) {
        state.withLock { state in
            state.socket = socket
            state.lastSent = .now
        }
    }

    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        let frame = String(buffer: frame)
        let assembled = state.withLock { state -> Result<String?, ProtocolError> in
            do throws(ProtocolError) {
                guard case .message(let text)? = try state.assembler.append(frame) else { return .success(nil) }
                return .success(text)
            } catch {
                return .failure(error)
            }
        }
        let text: String
        switch assembled {
        case .success(let assembled?):
            text = assembled
        case .success(nil):
            return
        case .failure(let error):
            malformed("\(error)", text: frame, output: &output)
            return
        }
        let decoded: ServerMessage
        do {
            decoded = try ServerMessage(json: JSONValue(parsing: text))
        } catch {
            malformed("\(error)", text: text, output: &output)
            return
        }
        if !deliver(decoded, text: text) {
            // The end is decided: readers learn it now, and the connection is closed.
            finish()
            output.closeConnection()
        }
    }

    func receivedBinary(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        malformed("a binary WebSocket message", text: "", output: &output)
    }

    /// Hands `message` on; returns whether the connection goes on.
    private func deliver(_ message: ServerMessage, text: String) -> Bool {
        let isGreeted = state.withLock { $0.isGreeted }
        if !isGreeted {
            if case .reset(let host) = message {
                // Firebase's servers, and Canopy's in a cluster, redirect instead of greeting.
                logger.debug("The server redirected the client", metadata: ["canopy.host": "\(host)"])
                end(.redirected(host: host))
                return false
            }
            guard case .hello(let timestamp, let version, let host, let sessionID, let extensions) = message else {
                let error = RealtimeClientError.connectFailed("\(url): expected a hello first, got \(text.prefix(200))")
                logger.error("\(error)")
                end(error)
                return false
            }
            state.withLock { $0.isGreeted = true }
            let hello = RealtimeHello(
                timestamp: timestamp, host: host, sessionID: sessionID, extensions: Set(extensions), version: version)
            helloSink.yield(.success(hello))
            helloSink.finish()
            return true
        }
        if case .shutdown(let reason) = message {
            logger.info("The server is shutting down: \(reason)")
            end(.closed("shutdown: \(reason)"))
            return false
        }
        messageSink.yield(message)
        return true
    }

    private func malformed(_ reason: String, text: String, output: inout RealtimeSocketOutput) {
        logger.error(
            "Malformed message from the server: \(reason)", metadata: ["canopy.message": "\(text.prefix(200))"])
        let isGreeted = state.withLock { $0.isGreeted }
        end(
            isGreeted ? .closed("malformed message: \(reason)") : .connectFailed("\(url): malformed message: \(reason)")
        )
        finish()
        output.closeConnection()
    }

    func closed(_ reason: RealtimeSocketCloseReason) {
        let (isUpgraded, isGreeted) = state.withLock { ($0.socket != nil, $0.isGreeted) }
        // Before the upgrade, the connect fails and says why.
        guard isUpgraded else { return }
        switch reason {
        case .closeFrame(let code, let text):
            let detail = (code.map(String.init) ?? "no status") + (text.isEmpty ? "" : ", \(text)")
            end(.closed("the server closed the connection (\(detail))"))
        case .closedByClient:
            end(.closed("closed by the client"))
        case .lost(let error?):
            end(isGreeted ? .closed("connection lost: \(error)") : .connectFailed("\(url): \(error)"))
        case .lost(nil):
            end(.closed("the server closed the connection"))
        }
        finish()
    }

    // MARK: Sending and ending

    /// Queues the frames of `text`; false once the connection is ending.
    func send(_ text: String) -> Bool {
        let socket = state.withLock { state -> RealtimeSocket? in
            guard state.reason == nil, let socket = state.socket else { return nil }
            state.lastSent = .now
            return socket
        }
        guard let socket else { return false }
        socket.send(text)
        return true
    }

    /// Starts a close handshake.
    func close() {
        end(.closed("closed by the client"))
        state.withLock { $0.socket }?.close()
    }

    /// Records why the connection ends; the first reason stays.
    private func end(_ reason: RealtimeClientError) {
        state.withLock { state in
            if state.reason == nil { state.reason = reason }
        }
    }

    /// The end is decided (or the connection is over): finishes every stream. Idempotent.
    private func finish() {
        let (reason, keepalive) = state.withLock { state in
            if state.reason == nil { state.reason = .closed("the connection ended") }
            state.isFinished = true
            // The socket holds this connection (its delegate) until the channel is gone.
            state.socket = nil
            defer { state.keepalive = nil }
            return (state.reason ?? .closed("the connection ended"), state.keepalive)
        }
        keepalive?.cancel()
        helloSink.yield(.failure(reason))
        helloSink.finish()
        messageSink.finish()
    }
}
