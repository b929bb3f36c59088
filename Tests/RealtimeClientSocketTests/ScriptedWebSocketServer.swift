import CanopyTesting
import Crypto
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A WebSocket server on 127.0.0.1 written against the bytes, for what a real server never does:
/// it upgrades every connection (or answers as told), sends the text frames it was given (and a
/// close frame, if told), then keeps the connection open without answering, and records the frames
/// clients send.
final class ScriptedWebSocketServer: Sendable {
    /// How the server answers an upgrade request.
    enum Upgrade: Sendable {
        /// `101` with the right `Sec-WebSocket-Accept`.
        case accept
        /// This response head instead (`HTTP/1.1 101 …` with a wrong accept value, a `404`, …).
        case respond(String)
        /// No answer at all.
        case silence
    }

    let port: Int
    private let channel: any Channel
    private let received: Received

    /// The text frames clients sent, in order.
    var receivedFrames: [String] { received.frames.withLock { $0 } }

    private init(port: Int, channel: any Channel, received: Received) {
        self.port = port
        self.channel = channel
        self.received = received
    }

    /// Starts a server that answers the upgrade as `upgrade` says and, once upgraded, sends
    /// `frames`, then a close frame with `closeCode` if given.
    static func start(
        sending frames: [String], upgrade: Upgrade = .accept, closeCode: UInt16? = nil
    ) async throws -> ScriptedWebSocketServer {
        let received = Received()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    received.channels.withLock { $0.append(child) }
                    try child.pipeline.syncOperations.addHandler(
                        Handler(frames: frames, upgrade: upgrade, closeCode: closeCode, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ScriptedWebSocketServer(port: channel.localAddress?.port ?? 0, channel: channel, received: received)
    }

    /// Waits up to `timeout` until a client sent `frame`; returns whether one did.
    func waitForFrame(_ frame: String, timeout: Duration = .seconds(15)) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(20)) { self.receivedFrames.contains(frame) }
    }

    /// Closes the listener and every connection.
    func stop() async {
        for child in received.channels.withLock({ $0 }) { try? await child.close() }
        try? await channel.close()
    }

    private final class Received: Sendable {
        let frames = Mutex<[String]>([])
        let channels = Mutex<[any Channel]>([])
    }

    /// Answers the upgrade request, sends the script, then decodes (masked) client text frames.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let frames: [String]
        private let upgrade: Upgrade
        private let closeCode: UInt16?
        private let received: Received
        private var buffer = ByteBuffer()
        private var upgraded = false

        init(frames: [String], upgrade: Upgrade, closeCode: UInt16?, received: Received) {
            self.frames = frames
            self.upgrade = upgrade
            self.closeCode = closeCode
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            buffer.writeBuffer(&bytes)
            if !upgraded {
                let text = String(buffer: buffer)
                guard let end = text.range(of: "\r\n\r\n") else { return }
                buffer.moveReaderIndex(forwardBy: text[..<end.upperBound].utf8.count)
                let key =
                    text.split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                    .map { $0.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces) } ?? ""
                let digest = Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
                upgraded = true
                switch upgrade {
                case .accept:
                    let response =
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Accept: \(Data(digest).base64EncodedString())\r\n\r\n"
                    var out = context.channel.allocator.buffer(string: response)
                    for frame in frames { Self.writeTextFrame(frame, to: &out) }
                    if let closeCode {
                        out.writeInteger(UInt8(0x88))
                        out.writeInteger(UInt8(2))
                        out.writeInteger(closeCode)
                    }
                    context.writeAndFlush(wrapOutboundOut(out), promise: nil)
                case .respond(let head):
                    context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: head)), promise: nil)
                case .silence:
                    break
                }
            }
            while let frame = readClientFrame() {
                received.frames.withLock { $0.append(frame) }
            }
        }

        /// A server frame: FIN + text, unmasked.
        static func writeTextFrame(_ text: String, to out: inout ByteBuffer) {
            let payload = Array(text.utf8)
            out.writeInteger(UInt8(0x81))
            if payload.count < 126 {
                out.writeInteger(UInt8(payload.count))
            } else if payload.count <= Int(UInt16.max) {
                out.writeInteger(UInt8(126))
                out.writeInteger(UInt16(payload.count))
            } else {
                out.writeInteger(UInt8(127))
                out.writeInteger(UInt64(payload.count))
            }
            out.writeBytes(payload)
        }

        /// One complete masked client frame's text (control frames give their opcode in brackets).
        private func readClientFrame() -> String? {
            let start = buffer.readerIndex
            guard let first = buffer.getInteger(at: start, as: UInt8.self),
                let second = buffer.getInteger(at: start + 1, as: UInt8.self)
            else { return nil }
            var offset = start + 2
            var length = Int(second & 0x7F)
            if length == 126 {
                guard let extended = buffer.getInteger(at: offset, as: UInt16.self) else { return nil }
                length = Int(extended)
                offset += 2
            } else if length == 127 {
                guard let extended = buffer.getInteger(at: offset, as: UInt64.self) else { return nil }
                length = Int(extended)
                offset += 8
            }
            let masked = second & 0x80 != 0
            let mask = masked ? buffer.getBytes(at: offset, length: 4) : [0, 0, 0, 0]
            if masked { offset += 4 }
            guard let mask, let payload = buffer.getBytes(at: offset, length: length) else { return nil }
            buffer.moveReaderIndex(to: offset + length)
            let bytes = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            let opcode = first & 0x0F
            return opcode == 1 ? String(decoding: bytes, as: UTF8.self) : "[opcode \(opcode)]"
        }
    }
}
