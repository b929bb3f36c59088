import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP client that sends a request and then never reads: a stalled reader, for tests of the
/// server's bounds on what it queues for slow clients. Its receive buffer is made small, so the
/// kernel soon stops taking what the server sends.
///
/// ```swift
/// let stalled = try StalledClient(port: server.port, request: "GET /a.json HTTP/1.1\r\n...\r\n\r\n")
/// // ... the server queues for it until it gives up
/// stalled.close()
/// ```
public final class StalledClient: Sendable {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port` and sends `request`.
    public init(port: Int, request: String) throws {
        #if canImport(Glibc)
        let kind = Int32(SOCK_STREAM.rawValue)
        #else
        let kind = SOCK_STREAM
        #endif
        let descriptor = socket(AF_INET, kind, 0)
        guard descriptor >= 0 else { throw StalledClientError.system("socket", errno) }
        var size: Int32 = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            closeDescriptor(descriptor)
            throw StalledClientError.system("connect", code)
        }
        let bytes = Array(request.utf8)
        let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else {
            let code = errno
            closeDescriptor(descriptor)
            throw StalledClientError.system("send", code)
        }
        self.descriptor = descriptor
    }

    public func close() {
        closeDescriptor(descriptor)
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(descriptor)
    #else
    _ = Darwin.close(descriptor)
    #endif
}

/// A system call of ``StalledClient`` failed.
public enum StalledClientError: Error, CustomStringConvertible {
    case system(String, Int32)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}
