public import NIOCore

/// What a ``RealtimeSocket`` does with what it receives. It runs on the connection's event loop,
/// so a delegate keeps plain mutable state and answers without a task switch (a load generator
/// must cost far less per message than the server it measures).
///
/// ```swift
/// final class Echo: RealtimeSocketDelegate {
///     var assembler = FrameAssembler()
///     func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
///         guard case .message(let text)? = try? assembler.append(String(buffer: frame)) else { return }
///         if text.contains(#""t":"h""#) { output.send(#"{"t":"c","d":{"t":"p","d":{}}}"#) }
///     }
///     func closed(_ reason: RealtimeSocketCloseReason) {}
/// }
/// ```
public protocol RealtimeSocketDelegate: AnyObject {
    /// One text frame's payload, as it came: joining frames into messages
    /// (`FrameAssembler`), or reading them without building strings, is the delegate's choice.
    /// What it queues on `output` is written at the end of the read, in one write.
    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput)

    /// One binary frame's payload, which the realtime protocol never sends; ignored by default.
    func receivedBinary(_ frame: ByteBuffer, output: inout RealtimeSocketOutput)

    /// The connection ended; this is the last call.
    func closed(_ reason: RealtimeSocketCloseReason)

    /// The connection is upgraded: called once, on the event loop, before any frame is passed on,
    /// with the socket that ``RealtimeSocket/connect(host:port:target:tls:group:configuration:delegate:)``
    /// returns (for a delegate that also sends from outside its calls). The socket holds its
    /// delegate: one that keeps the socket lets it go in ``closed(_:)``. Does nothing by default.
    func opened(_ socket: RealtimeSocket)

    /// Called once, on the event loop, as the socket is set up: returns whether
    /// ``RealtimeSocket/connect(host:port:target:tls:group:configuration:delegate:)`` waits after
    /// the upgrade until the delegate completes `ready` (once an `auth` request is answered, say).
    /// `connect` then returns when it succeeds, and throws the error it fails with. If the
    /// connection ends first, the socket fails it (after ``closed(_:)``). By default connect
    /// returns at the upgrade.
    func holdsConnect(until ready: EventLoopPromise<Void>) -> Bool
}

extension RealtimeSocketDelegate {
    public func opened(_ socket: RealtimeSocket) {}

    public func holdsConnect(until ready: EventLoopPromise<Void>) -> Bool { false }

    public func receivedBinary(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {}
}

/// What a delegate queues during one read; it is written with one flush at the end of the read.
public struct RealtimeSocketOutput {
    /// The messages queued, each split into frames when it is longer than a frame holds.
    var messages: [String] = []
    var isClosing = false
    var stopsReading = false

    public init() {}

    /// Queues one message (a serialized ``Transport/ClientMessage``, or any text).
    public mutating func send(_ text: String) { messages.append(text) }

    /// Ends the connection once the queued messages are written, without a close handshake.
    public mutating func closeConnection() { isClosing = true }

    /// Stops reading the socket after this read (the messages queued are still sent): the
    /// server's later messages pile up in the kernel's buffers, then in the server, as with a
    /// stalled client. ``RealtimeSocket/setReading(_:)`` reads again.
    public mutating func stopReadingSocket() { stopsReading = true }
}

/// Why a ``RealtimeSocket`` ended.
public enum RealtimeSocketCloseReason: Sendable, CustomStringConvertible {
    /// The server sent a close frame, with its status code if it had one and its reason text.
    case closeFrame(code: UInt16?, reason: String)
    /// This side ended it (``RealtimeSocket/close()``, ``RealtimeSocket/abort()``, a delegate's
    /// ``RealtimeSocketOutput/closeConnection()``).
    case closedByClient
    /// The connection ended without a close frame: the server closed or reset the socket, or an
    /// error (`error`, if one was seen) broke it.
    case lost((any Error)?)

    public var description: String {
        switch self {
        case .closeFrame(let code, let reason):
            "the server closed the connection (\(code.map(String.init) ?? "no status")\(reason.isEmpty ? "" : ", \(reason)"))"
        case .closedByClient: "closed by the client"
        case .lost(let error?): "connection lost: \(error)"
        case .lost(nil): "the server closed the connection"
        }
    }
}
