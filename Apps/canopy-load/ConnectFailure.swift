import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a TCP connection could not be made, in a few words (NIO's own errors say
/// `connection reset (error set): Connection refused (errno: 111)`).
enum ConnectFailure {
    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return describe(errno: error.errnoCode) }
        if let error = error as? NIOConnectionError {
            if let dns = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve \(error.host): \(dns)" }
            if let first = error.connectionErrors.first { return describe(first.error) }
            return "no address of \(error.host) to connect to"
        }
        if case ChannelError.connectTimeout(let timeout) = error {
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        }
        return "\(error)"
    }

    private static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused (is canopy-server running?)"
        case ETIMEDOUT: "no answer (timed out)"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
