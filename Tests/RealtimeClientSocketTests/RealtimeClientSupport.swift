import CanopyTesting
import Logging
import NIOCore
import NIOPosix
import RealtimeClientSocket
import Synchronization
import Testing
import Transport
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The logger the client tests give `RealtimeClient` (quiet unless `CANOPY_TEST_LOG_LEVEL` asks).
let clientLogger = TestServer.makeLogger(label: "canopy-realtime-client-test")

extension RealtimeEndpoint {
    /// The endpoint of a test server's namespace `test`.
    static func of(_ server: TestServer, namespace: String = "test") -> RealtimeEndpoint {
        RealtimeEndpoint(host: "127.0.0.1", port: server.port, secure: false, namespace: namespace)
    }
}

extension RealtimeClient {
    /// Sends request `number` with `action`, checking it was queued.
    func request(_ number: Int, _ action: ClientAction) {
        let queued = send(.request(ClientRequest(number: number, action: action)))
        #expect(queued, "request \(number) was not queued")
    }
}

extension AsyncStream<ServerMessage>.Iterator {
    /// Reads messages up to and including the answer to request `number` (all of them if the
    /// stream finishes first).
    mutating func messages(throughAnswerTo number: Int) async -> [ServerMessage] {
        var taken: [ServerMessage] = []
        while let message = await next() {
            taken.append(message)
            if case .response(number, _, _) = message { break }
        }
        return taken
    }

    /// Reads every message until the stream finishes.
    mutating func remaining() async -> [ServerMessage] {
        var taken: [ServerMessage] = []
        while let message = await next() { taken.append(message) }
        return taken
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never answers (not even the
/// WebSocket upgrade), holding them open until ``stop()``.
final class SilentListener: Sendable {
    /// The connections accepted so far.
    private final class Accepted: Sendable {
        let channels = Mutex<[any Channel]>([])
    }

    let port: Int
    private let channel: any Channel
    private let accepted: Accepted

    private init(port: Int, channel: any Channel, accepted: Accepted) {
        self.port = port
        self.channel = channel
        self.accepted = accepted
    }

    /// Whether every connection accepted so far has been closed (by the client: the listener
    /// never closes one before ``stop()``).
    var acceptedAllClosed: Bool {
        accepted.channels.withLock { channels in !channels.isEmpty && channels.allSatisfy { !$0.isActive } }
    }

    static func start() async throws -> SilentListener {
        let accepted = Accepted()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                accepted.channels.withLock { $0.append(child) }
                return child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentListener(port: channel.localAddress?.port ?? 0, channel: channel, accepted: accepted)
    }

    /// Closes the listener and every accepted connection.
    func stop() async {
        let children = accepted.channels.withLock { $0 }
        for child in children { try? await child.close() }
        try? await channel.close()
    }
}

/// A port on 127.0.0.1 where nothing listens: a socket bound to it and never listening, so that
/// connections are refused and no server started meanwhile (tests run in parallel) can take it.
struct ReservedPort {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw ReservedPortError(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ReservedPortError(call: "bind", errno: errno)
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Closes the socket, releasing the port (call it last, so that the port stays reserved).
    func release() { close(descriptor) }
}

struct ReservedPortError: Error {
    var call: String
    var errno: Int32
}

#if canImport(Glibc)
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
private let streamSocket = SOCK_STREAM
#endif
