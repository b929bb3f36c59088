import HummingbirdWSClient
import Logging
import NIOSSL
import NIOWebSocket
import Synchronization
import Transport
import Tree

/// The running side of one ``RealtimeClient``: a task that holds the WebSocket, reads and
/// assembles frames, writes queued frames in order and sends keepalives.
///
/// The reader, the writer and the keepalive run as three child tasks; the first to end (the server
/// closed, a malformed message, a close requested, a network error) ends the other two, and the
/// library then completes the WebSocket close handshake.
final class RealtimeConnection: Sendable {
    /// What the writer sends next.
    enum Outgoing: Sendable {
        /// Text frames of one message, sent back to back.
        case frames([String])
        /// A close handshake.
        case close
    }

    private struct State {
        var reason: RealtimeClientError?
        var isFinished = false
        var isGreeted = false
        var lastSent = ContinuousClock.now
        var task: Task<Void, Never>?
    }

    /// How long a close handshake may take before the socket is dropped.
    static let closeTimeout: Duration = .seconds(5)
    /// The largest WebSocket message read (a protocol frame holds at most 16,384 characters).
    static let maxWebSocketMessageBytes = 1 << 24

    let url: String
    let keepaliveInterval: Duration
    let logger: Logger
    let messages: AsyncStream<ServerMessage>
    private let messageSink: AsyncStream<ServerMessage>.Continuation
    private let outgoing: AsyncStream<Outgoing>
    private let outgoingSink: AsyncStream<Outgoing>.Continuation
    private let helloSignal: AsyncStream<Result<RealtimeHello, RealtimeClientError>>
    private let helloSink: AsyncStream<Result<RealtimeHello, RealtimeClientError>>.Continuation
    private let state = Mutex(State())

    init(url: String, keepaliveInterval: Duration, logger: Logger) {
        self.url = url
        self.keepaliveInterval = keepaliveInterval
        var logger = logger
        logger[metadataKey: "canopy.url"] = .string(url)
        self.logger = logger
        (messages, messageSink) = AsyncStream.makeStream()
        (outgoing, outgoingSink) = AsyncStream.makeStream()
        (helloSignal, helloSink) = AsyncStream.makeStream()
    }

    /// Why the connection ended, once it has.
    var endReason: RealtimeClientError? {
        state.withLock { $0.isFinished ? $0.reason : nil }
    }

    // MARK: Opening

    /// Starts connecting (with TLS when `tlsConfiguration` is given); `refusal` tells a failure
    /// that is the server's certificate being refused, and why.
    func start(tlsConfiguration: TLSConfiguration?, refusal: @escaping @Sendable (any Error) -> String?) {
        let task = Task { await self.run(tlsConfiguration: tlsConfiguration, refusal: refusal) }
        state.withLock { $0.task = task }
    }

    /// Waits for the hello; on timeout (or cancellation) abandons the connection and throws.
    func waitForHello(timeout: Duration) async throws(RealtimeClientError) -> RealtimeHello {
        let outcome = await withTaskGroup(of: Result<RealtimeHello, RealtimeClientError>?.self) { group in
            group.addTask { [helloSignal] in
                for await result in helloSignal { return result }
                return nil
            }
            group.addTask { [url] in
                do {
                    try await Task.sleep(for: timeout)
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
            abandon(error)
            throw error
        case nil:
            let error = RealtimeClientError.connectFailed("\(url): the connection ended before the hello")
            abandon(error)
            throw error
        }
    }

    /// Ends a connection that is not wanted any more: a close handshake if the WebSocket is open,
    /// else cancelling the connection task. A server that accepted the TCP connection but never
    /// answers the upgrade keeps the socket until it closes it (the WebSocket library gives no
    /// handle on the socket before the upgrade).
    private func abandon(_ reason: RealtimeClientError) {
        end(reason)
        outgoingSink.yield(.close)
        state.withLock { $0.task }?.cancel()
    }

    // MARK: Running

    private func run(tlsConfiguration: TLSConfiguration?, refusal: @Sendable (any Error) -> String?) async {
        let configuration = WebSocketClientConfiguration(
            maxFrameSize: Self.maxWebSocketMessageBytes, closeTimeout: Self.closeTimeout, autoPing: .disabled)
        do {
            let closeFrame = try await WebSocketClient.connect(
                url: url, configuration: configuration, tlsConfiguration: tlsConfiguration, logger: logger
            ) { inbound, outbound, _ in
                try await self.handle(inbound: inbound, outbound: outbound)
            }
            if let closeFrame {
                let reason = closeFrame.reason.map { ", \($0)" } ?? ""
                end(.closed("the server closed the connection (\(closeFrame.closeCode)\(reason))"))
            } else {
                end(.closed("the server closed the connection"))
            }
        } catch {
            if state.withLock({ $0.isGreeted }) {
                end(.closed("connection lost: \(error)"))
            } else if let reason = refusal(error) {
                end(.certificateRefused(reason))
            } else {
                end(.connectFailed("\(url): \(error)"))
            }
        }
        finish()
    }

    private func handle(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        state.withLock { $0.lastSent = .now }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.read(inbound) }
            group.addTask { try await self.write(to: outbound) }
            group.addTask { try await self.sendKeepalives() }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// Reads frames until the server closes or a message ends the connection.
    private func read(_ inbound: WebSocketInboundStream) async throws {
        var assembler = FrameAssembler()
        for try await message in inbound.messages(maxSize: Self.maxWebSocketMessageBytes) {
            guard case .text(let frame) = message else {
                malformed("a binary WebSocket message", text: "")
                finish()
                return
            }
            let text: String
            do {
                guard case .message(let assembled)? = try assembler.append(frame) else { continue }
                text = assembled
            } catch {
                malformed("\(error)", text: frame)
                finish()
                return
            }
            let decoded: ServerMessage
            do {
                decoded = try ServerMessage(json: JSONValue(parsing: text))
            } catch {
                malformed("\(error)", text: text)
                finish()
                return
            }
            guard deliver(decoded, text: text) else {
                // The end is decided: readers learn it now, while the close handshake goes on.
                finish()
                return
            }
        }
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

    private func malformed(_ reason: String, text: String) {
        logger.error(
            "Malformed message from the server: \(reason)", metadata: ["canopy.message": "\(text.prefix(200))"])
        let isGreeted = state.withLock { $0.isGreeted }
        end(
            isGreeted ? .closed("malformed message: \(reason)") : .connectFailed("\(url): malformed message: \(reason)")
        )
    }

    /// Writes queued frames in order until a close is asked for (then runs the handshake) or the
    /// connection ends.
    private func write(to outbound: WebSocketOutboundWriter) async throws {
        for await item in outgoing {
            switch item {
            case .frames(let frames):
                for frame in frames { try await outbound.write(.text(frame)) }
                state.withLock { $0.lastSent = .now }
            case .close:
                try await outbound.close(.normalClosure, reason: nil)
                // The reader ends when the server answers the close; this bounds the wait.
                try await Task.sleep(for: Self.closeTimeout)
                return
            }
        }
    }

    /// Queues a keepalive `"0"` whenever nothing was sent for ``keepaliveInterval``.
    private func sendKeepalives() async throws {
        while true {
            let now = ContinuousClock.now
            let due: ContinuousClock.Instant? = state.withLock { state in
                let due = state.lastSent + keepaliveInterval
                guard now >= due else { return due }
                state.lastSent = now
                return nil
            }
            if let due {
                try await Task.sleep(until: due, clock: .continuous)
            } else {
                outgoingSink.yield(.frames(["0"]))
            }
        }
    }

    // MARK: Sending and ending

    /// Queues the frames of `text`; false once the connection is ending.
    func send(_ text: String) -> Bool {
        guard state.withLock({ $0.reason == nil }) else { return false }
        if case .enqueued = outgoingSink.yield(.frames(FrameAssembler.frames(for: text))) { return true }
        return false
    }

    /// Starts a close handshake.
    func close() {
        end(.closed("closed by the client"))
        outgoingSink.yield(.close)
    }

    /// Records why the connection ends; the first reason stays.
    private func end(_ reason: RealtimeClientError) {
        state.withLock { state in
            if state.reason == nil { state.reason = reason }
        }
    }

    /// The end is decided (or the connection task is over): finishes every stream. Idempotent.
    private func finish() {
        let reason = state.withLock { state in
            if state.reason == nil { state.reason = .closed("the connection ended") }
            state.isFinished = true
            state.task = nil
            return state.reason ?? .closed("the connection ended")
        }
        helloSink.yield(.failure(reason))
        helloSink.finish()
        outgoingSink.finish()
        messageSink.finish()
    }
}
