import NIOCore
import RealtimeClientSocket
import Synchronization
public import Transport
public import Tree

/// A realtime-protocol client over a real WebSocket (a ``RealtimeSocket``), for tests: it sends
/// requests, joins split frames and keeps every server message until a test takes it.
///
/// ```swift
/// let client = try await RealtimeTestClient.connect(to: server)
/// let answer = try await client.request(.put(path: "a", data: 1, hash: nil))
/// #expect(answer.status == .ok)
/// await client.close()
/// ```
///
/// A connected client answers the server's WebSocket pings while it reads; ``vanish()`` makes it
/// stop reading, so it goes silent without a close handshake, like a peer whose network dropped.
public final class RealtimeTestClient: Sendable {
    /// The answer to one request.
    public struct Response: Sendable, Equatable {
        public var number: Int
        public var status: ResponseStatus
        public var data: JSONValue

        public var isOK: Bool { status == .ok }
    }

    /// How long a wait lasts when a test names no timeout: generous, as builds share the machine.
    public static let defaultTimeout: Duration = .seconds(15)

    public let url: String
    /// The control `h` message that opened the connection.
    public let hello: RealtimeHello
    private let socket: RealtimeSocket
    private let link: Link
    /// The last request number; numbers are taken and their frames queued under this lock, so
    /// requests reach the server in the order of their numbers.
    private let requestNumbers = Mutex(0)

    private init(url: String, hello: RealtimeHello, socket: RealtimeSocket, link: Link) {
        self.url = url
        self.hello = hello
        self.socket = socket
        self.link = link
    }

    /// Connects to `server` for `namespace` (`nil` names none: the server's default), naming
    /// `lastSession` in `ls=` if given, and waits for the hello.
    public static func connect(
        to server: TestServer, namespace: String? = "test", lastSession: String? = nil,
        timeout: Duration = defaultTimeout
    ) async throws -> RealtimeTestClient {
        try await connect(url: server.webSocketURL(namespace: namespace, lastSession: lastSession), timeout: timeout)
    }

    /// Connects to a realtime URL (`ws://HOST:PORT/.ws?v=5&ns=...`) and waits for the hello.
    public static func connect(url: String, timeout: Duration = defaultTimeout) async throws -> RealtimeTestClient {
        let link = Link()
        var configuration = RealtimeSocket.Configuration()
        configuration.maxFrameSize = 1 << 28
        configuration.connectTimeout = .nanoseconds(Int64(timeout / .nanoseconds(1)))
        configuration.upgradeTimeout = configuration.connectTimeout
        let connecting = Task { () -> RealtimeSocket? in
            do {
                return try await RealtimeSocket.connect(url: url, configuration: configuration) { link }
            } catch {
                link.ended(with: error)
                link.finish()
                return nil
            }
        }
        let first = await link.messages.take(timeout: timeout)
        // Bounded: the connect and the upgrade each time out.
        let socket = await connecting.value
        guard case .hello(let timestamp, let version, let host, let sessionID, let extensions)? = first, let socket
        else {
            socket?.closeWithoutHandshake()
            throw RealtimeTestError.noHello(
                received: first, upgraded: socket != nil, frames: link.frames,
                connectionError: link.error.map { "\($0)" })
        }
        let hello = RealtimeHello(
            timestamp: timestamp, host: host, sessionID: sessionID, extensions: Set(extensions), version: version)
        return RealtimeTestClient(url: url, hello: hello, socket: socket, link: link)
    }

    // MARK: Sending

    /// Sends a request with the next request number, split into frames of at most
    /// `maxFrameCharacters` (a count frame, then the pieces) when longer; returns its number.
    @discardableResult
    public func send(
        _ action: ClientAction, writeID: WriteID? = nil, maxFrameCharacters: Int = FrameAssembler.maxFrameCharacters
    ) async throws -> Int {
        let (number, written) = try requestNumbers.withLock { number throws(RealtimeTestError) in
            number += 1
            let request = ClientRequest(number: number, action: action, writeID: writeID)
            let text = ClientMessage.request(request).json.serialized()
            return (number, try write(FrameAssembler.frames(for: text, maxFrameCharacters: maxFrameCharacters)))
        }
        try await wait(for: written)
        return number
    }

    /// Sends text frames exactly as given (for malformed input, keepalives and hand-split messages).
    public func sendRaw(_ frames: String...) async throws {
        try await sendRaw(frames)
    }

    /// Sends text frames exactly as given, back to back.
    public func sendRaw(_ frames: [String]) async throws {
        let written = try requestNumbers.withLock { _ throws(RealtimeTestError) in try write(frames) }
        try await wait(for: written)
    }

    /// Queues `frames` on the socket (under ``requestNumbers``' lock, so queued in order).
    private func write(_ frames: [String]) throws(RealtimeTestError) -> EventLoopFuture<Void> {
        guard !link.messages.isFinished else { throw .notConnected }
        return socket.send(frames: frames)
    }

    private func wait(for written: EventLoopFuture<Void>) async throws {
        do {
            try await written.get()
        } catch {
            throw RealtimeTestError.notConnected
        }
    }

    /// Sends control `p` (a protocol-level ping; the server answers control `o`).
    public func sendPing() async throws {
        try await sendRaw(ClientMessage.ping.json.serialized())
    }

    /// Sends `action` and waits for its answer, leaving other messages for later takes.
    public func request(
        _ action: ClientAction, writeID: WriteID? = nil, timeout: Duration = defaultTimeout
    ) async throws -> Response {
        let number = try await send(action, writeID: writeID)
        return try await response(to: number, timeout: timeout)
    }

    /// Sends `action` and returns the answer's data; throws unless the status is `ok`.
    @discardableResult
    public func requestOK(_ action: ClientAction, timeout: Duration = defaultTimeout) async throws -> JSONValue {
        let answer = try await request(action, timeout: timeout)
        guard answer.isOK else { throw RealtimeTestError.notOK(action: action.name, answer.status.text, answer.data) }
        return answer.data
    }

    /// A one-shot read (`g`) of `path`, optionally with a query object.
    public func get(_ path: String, query: JSONValue? = nil) async throws -> JSONValue {
        try await requestOK(.get(path: path, query: query))
    }

    /// Sets `path` to `value` and waits for `ok`.
    public func put(_ path: String, _ value: JSONValue) async throws {
        try await requestOK(.put(path: path, data: value, hash: nil))
    }

    // MARK: Receiving

    /// Waits for the answer to request `number`.
    public func response(to number: Int, timeout: Duration = defaultTimeout) async throws -> Response {
        let message = await link.messages.take(timeout: timeout) { message in
            if case .response(number, _, _) = message { return true }
            return false
        }
        guard case .response(let number, let status, let data)? = message else {
            throw RealtimeTestError.timedOut(
                "the answer to request \(number)", connectionEnded: link.messages.isFinished)
        }
        return Response(number: number, status: status, data: data)
    }

    /// Takes the oldest message of any kind.
    public func nextMessage(timeout: Duration = defaultTimeout) async throws -> ServerMessage {
        guard let message = await link.messages.take(timeout: timeout) else {
            throw RealtimeTestError.timedOut("a message", connectionEnded: link.messages.isFinished)
        }
        return message
    }

    /// Takes the oldest data push (`d` or `m`), leaving other messages.
    public func nextPush(timeout: Duration = defaultTimeout) async throws -> ServerMessage {
        guard let message = await link.messages.take(timeout: timeout, where: \.isDataPush) else {
            throw RealtimeTestError.timedOut("a data push", connectionEnded: link.messages.isFinished)
        }
        return message
    }

    /// Takes the oldest message `accepts` takes.
    public func next(
        timeout: Duration = defaultTimeout, where accepts: @escaping @Sendable (ServerMessage) -> Bool
    ) async throws -> ServerMessage {
        guard let message = await link.messages.take(timeout: timeout, where: accepts) else {
            throw RealtimeTestError.timedOut("a matching message", connectionEnded: link.messages.isFinished)
        }
        return message
    }

    /// Waits `duration` for a data push; returns it if one came (for "nothing is sent" checks).
    public func pushIfAny(within duration: Duration) async -> ServerMessage? {
        await link.messages.take(timeout: duration, where: \.isDataPush)
    }

    /// The messages received and not taken yet, oldest first.
    public var pendingMessages: [ServerMessage] { link.messages.buffered }

    /// Every text frame received, in order (the hello included).
    public var receivedFrames: [String] { link.state.withLock { $0.frames } }

    /// Messages that did not decode as server messages.
    public var undecodableMessages: [String] { link.state.withLock { $0.undecodable } }

    /// Whether the connection has ended (closed by either side).
    public var isClosed: Bool { link.messages.isFinished }

    /// Waits up to `timeout` for the connection to end; returns whether it did.
    public func waitUntilClosed(timeout: Duration = defaultTimeout) async -> Bool {
        if link.messages.isFinished { return true }
        return await link.endSignal.take(timeout: timeout) != nil || link.messages.isFinished
    }

    // MARK: Ending

    /// Closes the connection with a close handshake and waits until it has ended.
    public func close() async {
        // A silent client does not read the server's answering close frame: do not wait for it.
        if !link.isSilenced {
            socket.close()
            _ = await waitUntilClosed(timeout: .seconds(5))
        }
        socket.closeWithoutHandshake()
        try? await socket.closeFuture.get()
        link.finish()
    }

    /// Goes silent without a close handshake: the client stops reading, so it no longer answers
    /// the server's WebSocket pings (those are answered while reading) and the server must notice
    /// by its heartbeat. Call ``close()`` afterwards to release the socket.
    public func vanish() async throws {
        link.silence()
        try await socket.setReading(false)
    }
}

/// Why a ``RealtimeTestClient`` call failed.
public enum RealtimeTestError: Error, CustomStringConvertible {
    case noHello(received: ServerMessage?, upgraded: Bool, frames: [String], connectionError: String?)
    case timedOut(String, connectionEnded: Bool)
    case notOK(action: String, String, JSONValue)
    case notConnected

    public var description: String {
        switch self {
        case .noHello(let received, let upgraded, let frames, let error):
            "expected a hello first, got \(received.map { "\($0)" } ?? "nothing")"
                + (upgraded ? " after the upgrade, frames \(frames)" : " (the WebSocket upgrade did not complete)")
                + (error.map { " (connection error: \($0))" } ?? "")
        case .timedOut(let what, let ended):
            "timed out waiting for \(what)" + (ended ? " (the connection has ended)" : "")
        case .notOK(let action, let status, let data):
            "request \"\(action)\" answered \(status): \(data.serialized())"
        case .notConnected:
            "the connection is not open"
        }
    }
}

extension ServerMessage {
    /// Whether this is a data push (`d` overwrite or `m` merge).
    public var isDataPush: Bool {
        switch self {
        case .overwrite, .merge: true
        default: false
        }
    }
}

/// What one connection received, kept for the test: the socket's delegate, on its event loop.
private final class Link: RealtimeSocketDelegate, Sendable {
    struct State {
        var assembler = FrameAssembler()
        var frames: [String] = []
        var undecodable: [String] = []
        var isSilenced = false
        var error: (any Error)?
    }

    let state = Mutex(State())
    let messages = Inbox<ServerMessage>()
    let endSignal = Inbox<Bool>()

    var error: (any Error)? { state.withLock { $0.error } }
    var frames: [String] { state.withLock { $0.frames } }
    var isSilenced: Bool { state.withLock { $0.isSilenced } }

    func silence() {
        state.withLock { $0.isSilenced = true }
    }

    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        let frame = String(buffer: frame)
        let assembled = state.withLock { state -> Result<String?, ProtocolError> in
            state.frames.append(frame)
            do throws(ProtocolError) {
                guard case .message(let text)? = try state.assembler.append(frame) else { return .success(nil) }
                return .success(text)
            } catch {
                if state.error == nil { state.error = error }
                return .failure(error)
            }
        }
        switch assembled {
        case .success(let text?):
            do {
                messages.append(try ServerMessage(json: try JSONValue(parsing: text)))
            } catch {
                state.withLock { $0.undecodable.append(text) }
            }
        case .success(nil):
            break
        case .failure:
            output.closeConnection()
        }
    }

    func closed(_ reason: RealtimeSocketCloseReason) {
        if case .lost(let error?) = reason { ended(with: error) }
        // A silent client reads nothing more, its connection's end included: it learns of it at
        // its own close().
        if !isSilenced { finish() }
    }

    func ended(with error: any Error) {
        state.withLock { if $0.error == nil { $0.error = error } }
    }

    func finish() {
        messages.finish()
        endSignal.append(true)
    }
}
