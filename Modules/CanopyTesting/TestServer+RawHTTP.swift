import Foundation
public import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a server answered on a plain TCP connection to bytes sent as they are.
public struct RawHTTPExchange: Sendable {
    /// Everything read, as text (invalid UTF-8 replaced).
    public var text: String
    /// Whether the server closed the connection (rather than the read giving up after its timeout).
    public var closedByServer: Bool

    /// The status code of the first status line, or `nil` when nothing readable came back.
    public var status: Int? {
        guard text.hasPrefix("HTTP/1.") else { return nil }
        return text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
    }

    /// The header fields of the first response, names as sent.
    public var headers: [(name: String, value: String)] {
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        return head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Everything after the first header block.
    public var body: String {
        guard let end = text.range(of: "\r\n\r\n") else { return "" }
        return String(text[end.upperBound...])
    }

    /// The body parsed as JSON, or `nil`.
    public var json: JSONValue? { try? JSONValue(parsing: body) }
}

/// Why a raw exchange could not take place.
public enum RawHTTPError: Error, CustomStringConvertible {
    case connectFailed(port: Int, errno: Int32)

    public var description: String {
        switch self {
        case .connectFailed(let port, let code):
            "could not connect to 127.0.0.1:\(port): \(String(cString: strerror(code)))"
        }
    }
}

extension TestServer {
    /// Opens a plain TCP connection, sends `bytes` exactly as given (while reading, so a server that
    /// answers before reading everything is heard), and reads until the server closes the
    /// connection or `timeout` passes. The client never closes its side first.
    /// With `until`, it also stops once the text received contains it (the connection left open).
    public func exchangeRaw(
        _ bytes: [UInt8], timeout: Duration = .seconds(30), until marker: String? = nil
    ) async throws -> RawHTTPExchange {
        let port = port
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try RawConnection.exchange(bytes, port: port, timeout: timeout, until: marker) })
            }
        }
    }

    /// ``exchangeRaw(_:timeout:until:)`` with text.
    public func exchangeRaw(
        _ text: String, timeout: Duration = .seconds(30), until marker: String? = nil
    ) async throws -> RawHTTPExchange {
        try await exchangeRaw(Array(text.utf8), timeout: timeout, until: marker)
    }
}

/// Blocking socket calls for ``TestServer/exchangeRaw(_:timeout:)``, run on a thread of their own.
private enum RawConnection {
    static func exchange(
        _ bytes: [UInt8], port: Int, timeout: Duration, until marker: String?
    ) throws -> RawHTTPExchange {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw RawHTTPError.connectFailed(port: port, errno: errno) }
        var senderDone: DispatchSemaphore?
        defer {
            // Ends a send the server stopped reading, and lets the sender finish before the
            // descriptor is closed (and its number reused).
            shutdown(descriptor, Int32(SHUT_RDWR))
            senderDone?.wait()
            close(descriptor)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RawHTTPError.connectFailed(port: port, errno: errno) }
        var slice = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &slice, socklen_t(MemoryLayout<timeval>.size))

        let done = DispatchSemaphore(value: 0)
        senderDone = done
        Thread.detachNewThread {
            sendAll(bytes, on: descriptor)
            done.signal()
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[0..<count]
                if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
            } else if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                // End of stream, or a reset: either way the server closed the connection.
                return RawHTTPExchange(text: String(decoding: received, as: UTF8.self), closedByServer: true)
            }
        }
        return RawHTTPExchange(text: String(decoding: received, as: UTF8.self), closedByServer: false)
    }

    private static func sendAll(_ bytes: [UInt8], on descriptor: Int32) {
        #if canImport(Glibc)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        var offset = 0
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            while offset < raw.count {
                let sent = send(descriptor, base + offset, raw.count - offset, flags)
                guard sent > 0 else { return }  // the server closed or reset the connection
                offset += sent
            }
        }
    }
}
