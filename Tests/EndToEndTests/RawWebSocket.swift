import CanopyTesting
import Transport
import Tree

#if canImport(Glibc)
import Glibc

private let systemConnect = Glibc.connect
private let systemSend = Glibc.send
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin

private let systemConnect = Darwin.connect
private let systemSend = Darwin.send
private let streamSocket = SOCK_STREAM
#endif

/// A WebSocket client on a plain TCP socket that sends exactly the bytes a test asks for
/// (reserved opcodes and bits, unmasked frames, invalid UTF-8, garbage) and can end its socket
/// without a close frame, as a killed app's kernel does.
///
/// ```swift
/// let socket = try await RawWebSocket.connect(to: server)
/// try socket.sendFrame(opcode: 0x3, payload: [])
/// #expect(try await socket.closeCode() == 1002)
/// ```
final class RawWebSocket {
    /// A frame the server sent.
    struct Frame: Equatable {
        var fin: Bool
        var opcode: UInt8
        var payload: [UInt8]

        var text: String { String(decoding: payload, as: UTF8.self) }

        /// The status code of a close frame, if it carries one.
        var closeCode: Int? {
            guard opcode == 0x8, payload.count >= 2 else { return nil }
            return Int(payload[0]) << 8 | Int(payload[1])
        }
    }

    private var descriptor: Int32
    private var received: [UInt8] = []
    private var requestNumber = 1000
    /// The session id of the hello.
    private(set) var sessionID = ""
    /// Every text frame received, in order.
    private(set) var texts: [String] = []
    /// The number of the request sent with the upgrade, if any.
    private(set) var firstRequestNumber: Int?

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Connects to `server`, upgrades to the realtime protocol and reads the hello. With
    /// `firstRequest`, its frame is sent in the same write as the upgrade request (its number is
    /// ``firstRequestNumber``), so it waits on the server while the connection opens. `headers` are
    /// added to the upgrade request.
    static func connect(
        to server: TestServer, namespace: String = "test", lastSession: String? = nil,
        firstRequest: ClientAction? = nil, headers: [(String, String)] = []
    )
        async throws -> RawWebSocket
    {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw RawWebSocketError.system("socket", errno) }
        let socket = RawWebSocket(descriptor: descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemConnect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RawWebSocketError.system("connect", errno) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)

        var target = "/.ws?v=5&ns=\(namespace)"
        if let lastSession { target += "&ls=\(lastSession)" }
        let request =
            "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + "Sec-WebSocket-Version: 13\r\n" + headers.map { "\($0): \($1)\r\n" }.joined() + "\r\n"
        var bytes = Array(request.utf8)
        if let firstRequest {
            let (text, number) = socket.request(firstRequest)
            socket.firstRequestNumber = number
            bytes += frame(opcode: 0x1, payload: text)
        }
        try socket.send(bytes)
        let head = try await socket.readResponseHead()
        guard head.hasPrefix("HTTP/1.1 101") else { throw RawWebSocketError.notUpgraded(head) }
        guard let hello = try await socket.nextFrame(), hello.opcode == 0x1,
            case .hello(_, _, _, let sessionID, _) = try ServerMessage(json: try JSONValue(parsing: hello.text))
        else { throw RawWebSocketError.noHello }
        socket.sessionID = sessionID
        return socket
    }

    // MARK: Sending

    /// Writes `bytes` to the socket as they are.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { systemSend(descriptor, $0.baseAddress, $0.count, 0) }
            if written < 0 {
                guard errno == EAGAIN || errno == EINTR else { throw RawWebSocketError.system("send", errno) }
                continue
            }
            offset += written
        }
    }

    /// Sends one frame: `rsv` holds the three reserved bits (0–7); a masked frame uses a fixed key.
    func sendFrame(fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, payload: [UInt8], masked: Bool = true) throws {
        try send(Self.frame(fin: fin, rsv: rsv, opcode: opcode, payload: payload, masked: masked))
    }

    /// The bytes of one frame, as ``sendFrame(fin:rsv:opcode:payload:masked:)`` sends them.
    static func frame(
        fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, payload: [UInt8], masked: Bool = true
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv & 0x7) << 4 | (opcode & 0xF)]
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126:
            bytes.append(maskBit | UInt8(payload.count))
        case ..<65536:
            bytes.append(maskBit | 126)
            bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        if masked {
            let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
            bytes += key
            bytes += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        } else {
            bytes += payload
        }
        return bytes
    }

    /// Sends `text` as one masked text frame.
    func sendText(_ text: String) throws {
        try sendFrame(opcode: 0x1, payload: Array(text.utf8))
    }

    /// The UTF-8 of a request with a new number, and that number.
    func request(_ action: ClientAction) -> (bytes: [UInt8], number: Int) {
        requestNumber += 1
        let text = ClientMessage.request(ClientRequest(number: requestNumber, action: action)).json.serialized()
        return (Array(text.utf8), requestNumber)
    }

    /// Sends a request and waits for its answer's status.
    func requestStatus(_ action: ClientAction) async throws -> ResponseStatus? {
        let (bytes, number) = request(action)
        try sendFrame(opcode: 0x1, payload: bytes)
        return try await status(of: number)
    }

    /// Waits for the answer to request `number`; returns its status, or `nil` if the socket ended.
    func status(of number: Int) async throws -> ResponseStatus? {
        while let frame = try await nextFrame() {
            guard frame.opcode == 0x1,
                case .response(number, let status, _)? = try? ServerMessage(json: try JSONValue(parsing: frame.text))
            else { continue }
            return status
        }
        return nil
    }

    // MARK: Ending

    /// Shuts the sending side down (TCP FIN) without a close frame.
    func shutdownSending() {
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Closes the socket without a close frame; with `reset`, as a reset (TCP RST) rather than a FIN.
    func closeAbruptly(reset: Bool = false) {
        if reset {
            var option = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        close(descriptor)
        descriptor = -1
    }

    // MARK: Receiving

    /// The next frame from the server, or `nil` once the server closed the socket.
    func nextFrame(timeout: Duration = RealtimeTestClient.defaultTimeout) async throws -> Frame? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let frame = takeFrame() {
                if frame.opcode == 0x1 { texts.append(frame.text) }
                return frame
            }
            guard try await readMore(until: deadline) else { return nil }
        }
    }

    /// Reads frames until a close frame; returns its code (`nil` if it carried none), or throws
    /// if the socket ended or the time ran out first.
    func closeCode(timeout: Duration = RealtimeTestClient.defaultTimeout) async throws -> Int? {
        while let frame = try await nextFrame(timeout: timeout) {
            if frame.opcode == 0x8 { return frame.closeCode }
        }
        throw RawWebSocketError.endedWithoutCloseFrame
    }

    /// Waits until the server closes the socket; returns whether it did within `timeout`.
    func waitForEnd(timeout: Duration = RealtimeTestClient.defaultTimeout) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        do {
            while try await readMore(until: deadline) { received.removeAll() }
            return true
        } catch RawWebSocketError.timedOut {
            return false
        }
    }

    private func readResponseHead() async throws -> String {
        let deadline = ContinuousClock.now + RealtimeTestClient.defaultTimeout
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let range = received.indices.first(where: { received[$0...].starts(with: end) }) {
                let head = String(decoding: received[..<range], as: UTF8.self)
                received.removeFirst(range + end.count)
                return head
            }
            guard try await readMore(until: deadline) else { throw RawWebSocketError.notUpgraded("") }
        }
    }

    /// Reads what the socket has; returns `false` at its end (FIN or reset).
    private func readMore(until deadline: ContinuousClock.Instant) async throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[..<count]
                return true
            }
            if count == 0 { return false }
            switch errno {
            case EAGAIN, EINTR:
                guard ContinuousClock.now < deadline else { throw RawWebSocketError.timedOut }
                try await Task.sleep(for: .milliseconds(5))
            case ECONNRESET:
                return false
            default:
                throw RawWebSocketError.system("recv", errno)
            }
        }
    }

    /// Takes one whole frame from what was received, if there is one.
    private func takeFrame() -> Frame? {
        guard received.count >= 2 else { return nil }
        var length = Int(received[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard received.count >= 4 else { return nil }
            length = Int(received[2]) << 8 | Int(received[3])
            offset = 4
        } else if length == 127 {
            guard received.count >= 10 else { return nil }
            length = received[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard received.count >= offset + length else { return nil }
        let frame = Frame(
            fin: received[0] & 0x80 != 0, opcode: received[0] & 0x0F, payload: Array(received[offset..<offset + length])
        )
        received.removeFirst(offset + length)
        return frame
    }
}

/// Why a ``RawWebSocket`` call failed.
enum RawWebSocketError: Error, CustomStringConvertible {
    case system(String, Int32)
    case notUpgraded(String)
    case noHello
    case timedOut
    case endedWithoutCloseFrame

    var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed with errno \(code)"
        case .notUpgraded(let head): "the server did not upgrade: \(head)"
        case .noHello: "the server did not send a hello first"
        case .timedOut: "timed out waiting for the server"
        case .endedWithoutCloseFrame: "the socket ended without a close frame"
        }
    }
}
