import NIOCore
import NIOPosix
import RealtimeClientSocket
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
    fileprivate var socket: RealtimeSocketOutput

    mutating func send(_ text: String) { socket.send(text) }
    mutating func closeConnection() { socket.closeConnection() }
    /// Stops reading the socket after this read (the messages queued are still sent): the server's
    /// later messages pile up in the kernel's buffers, then in the server, as with a stalled client.
    /// ``LoadConnection/setReading(_:)`` reads again.
    mutating func stopReadingSocket() { socket.stopReadingSocket() }
}

/// One realtime-protocol WebSocket connection of the load generator: a ``RealtimeSocket`` whose
/// frames are joined into messages for a ``LoadSession``.
final class LoadConnection: Sendable {
    let socket: RealtimeSocket

    private init(socket: RealtimeSocket) { self.socket = socket }

    /// The connection's channel.
    var channel: any Channel { socket.channel }

    /// Connects to `ws://host:port/uri` (`wss://` with ``LoadTLS``) and hands every message to the
    /// session made by `makeSession`.
    ///
    /// `receiveBufferSize` sets the socket's `SO_RCVBUF` before it connects (a small one makes a
    /// client that stops reading stall the server's writes sooner). With `authToken`, the connection
    /// sends it in an `auth` request once greeted and returns once it is accepted (the session sees
    /// the hello only then); a refused token throws ``LoadError/tokenRefused(server:status:reason:)``.
    static func connect(
        host: String, port: Int, uri: String, group: any EventLoopGroup, connectTimeout: TimeAmount = .seconds(10),
        receiveBufferSize: Int? = nil, authToken: String? = nil, localAddress: String? = nil,
        makeSession: @escaping @Sendable () -> any LoadSession
    ) async throws -> LoadConnection {
        var configuration = RealtimeSocket.Configuration()
        configuration.connectTimeout = connectTimeout
        configuration.receiveBufferSize = receiveBufferSize
        configuration.localAddress = localAddress
        let server = "\(host):\(port)"
        do {
            let socket = try await RealtimeSocket.connect(
                host: host, port: port, target: uri, tls: LoadTLS.context, group: group, configuration: configuration
            ) {
                LoadHandler(session: makeSession(), credential: authToken.map { ($0, server) })
            }
            return LoadConnection(socket: socket)
        } catch let error as LoadError {
            throw error
        } catch RealtimeSocketError.cannotConnect(let address, let cause) {
            throw LoadError.cannotConnect(address: address, reason: ConnectFailure.describe(cause))
        } catch RealtimeSocketError.notUpgraded(let url, let cause) {
            throw LoadError.notUpgraded("\(url) (\(cause))")
        } catch {
            throw LoadError.notUpgraded("\(LoadTLS.isEnabled ? "wss" : "ws")://\(server)\(uri) (\(error))")
        }
    }

    /// A TCP client bootstrap with `TCP_NODELAY`, and `SO_RCVBUF` when `receiveBufferSize` is given.
    static func bootstrap(
        group: any EventLoopGroup, connectTimeout: TimeAmount = .seconds(10), receiveBufferSize: Int? = nil
    ) -> ClientBootstrap {
        RealtimeSocket.bootstrap(group: group, connectTimeout: connectTimeout, receiveBufferSize: receiveBufferSize)
    }

    /// Connects `bootstrap` to `host:port` (an IP address directly, without resolving it). A failure
    /// to connect throws ``LoadError/cannotConnect(address:reason:)``.
    static func connect<Output: Sendable>(
        _ bootstrap: ClientBootstrap, host: String, port: Int,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> Output {
        do {
            return try await RealtimeSocket.connect(
                bootstrap, host: host, port: port, channelInitializer: channelInitializer)
        } catch {
            guard case .cannotConnect(let address, let cause) = error else { throw error }
            throw LoadError.cannotConnect(address: address, reason: ConnectFailure.describe(cause))
        }
    }

    /// Sends one message from outside the event loop.
    func send(_ text: String) { socket.send(text) }

    /// Closes the connection without a close handshake.
    func close() { socket.closeWithoutHandshake() }

    /// Reads the socket again after ``LoadOutput/stopReadingSocket()`` (or stops reading it).
    func setReading(_ reading: Bool) async throws {
        try await socket.setReading(reading)
    }

    /// Cuts the connection at once, as a dropped network path would (a TCP reset, no close handshake).
    func abort() { socket.abort() }
}

/// Joins frames into messages for the session; before a credential is accepted, runs the `auth`
/// exchange instead (``LoadAuthentication``).
private final class LoadHandler: RealtimeSocketDelegate {
    private let session: any LoadSession
    /// The token and `host:port`, until the socket is set up.
    private let credential: (token: String, server: String)?
    /// The credential to send once greeted, until the server accepted it; `nil` without one.
    private var authentication: LoadAuthentication?
    private var assembler = FrameAssembler()

    init(session: any LoadSession, credential: (token: String, server: String)?) {
        self.session = session
        self.credential = credential
    }

    func holdsConnect(until ready: EventLoopPromise<Void>) -> Bool {
        guard let credential else { return false }
        authentication = LoadAuthentication(token: credential.token, server: credential.server, accepted: ready)
        return true
    }

    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        guard case .message(let text)? = try? assembler.append(String(buffer: frame)) else { return }
        // Swapped in and out rather than copied: no reference counting per message, and the
        // session appends to the only reference of the output's storage.
        var load = LoadOutput(socket: RealtimeSocketOutput())
        swap(&load.socket, &output)
        if authentication != nil {
            authenticate(text, output: &load)
        } else {
            session.received(text, output: &load)
        }
        swap(&load.socket, &output)
    }

    /// Before the credential is accepted: sends it once greeted, and hands the session the hello
    /// once the server accepted it; a refusal fails the connection.
    private func authenticate(_ text: String, output: inout LoadOutput) {
        guard var step = authentication else { return }
        switch step.received(text) {
        case .send(let request):
            output.send(request)
            authentication = step
        case .accepted(let hello):
            authentication = nil
            step.accepted.succeed(())
            session.received(hello, output: &output)
        case .refused(let error):
            authentication = nil
            step.accepted.fail(error)
            output.closeConnection()
        case .ignored:
            break
        }
    }

    func closed(_ reason: RealtimeSocketCloseReason) {
        if let authentication {
            // The connection ended before the server answered the credential.
            self.authentication = nil
            authentication.accepted.fail(
                LoadError.tokenRefused(
                    server: authentication.server, status: "closed",
                    reason: "the connection closed before the server answered the auth request"))
        }
        session.closed()
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

    /// The status of a response text (`ok`, or an error code such as `too_many_listens`): the string
    /// after the first `"s":"` (a response's data comes before its status, so it must not hold one).
    static func status(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            guard let start = offset(after: #""s":""#, in: bytes) else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
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
