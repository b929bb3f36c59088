#if os(Linux)
import Foundation
import Glibc
import Synchronization

/// A netlink route socket read on a thread of its own: the kernel writes a message to it whenever
/// an interface or an address changes. After each batch of messages (and once at the start) the
/// thread reads the interfaces again and reports the path's status; the messages themselves are
/// only a signal, so one lost when the socket's buffer overflows (`ENOBUFS`) loses nothing.
final class NetlinkWatcher: Sendable {
    private struct Descriptors {
        let netlink: Int32
        let wakeRead: Int32
        let wakeWrite: Int32
        /// Set by the thread when it closed the descriptors; nothing may use them after.
        var closed = false
    }

    /// `RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR` (`linux/rtnetlink.h`, which Glibc's
    /// module does not import).
    static let groups: UInt32 = 0x1 | 0x10 | 0x100
    /// `NETLINK_ROUTE`.
    private static let routeProtocol: Int32 = 0

    private let descriptors: Mutex<Descriptors>

    /// Opens and binds the socket and starts the thread. `report` gets the status on the watcher's
    /// thread; `ended` runs there last, once the descriptors are closed, after ``stop()`` or an
    /// error the thread cannot go on from.
    static func start(
        report: @escaping @Sendable (NetworkPathStatus) -> Void, ended: @escaping @Sendable () -> Void
    ) throws(NetlinkError) -> NetlinkWatcher {
        let netlink = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), routeProtocol)
        guard netlink >= 0 else { throw .call("socket(AF_NETLINK)", errno: errno) }
        var address = sockaddr_storage()
        withUnsafeMutableBytes(of: &address) { bytes in
            bytes.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
            bytes.storeBytes(of: groups, toByteOffset: 8, as: UInt32.self)
        }
        // sockaddr_nl: family, padding, port id (0: the kernel picks), groups.
        let bound = withUnsafePointer(to: &address) { storage in
            storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(netlink, $0, 12) }
        }
        guard bound == 0 else {
            let error = errno
            close(netlink)
            throw .call("bind(AF_NETLINK)", errno: error)
        }
        var wake: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &wake) == 0 else {
            let error = errno
            close(netlink)
            throw .call("socketpair", errno: error)
        }
        let watcher = NetlinkWatcher(Descriptors(netlink: netlink, wakeRead: wake[0], wakeWrite: wake[1]))
        let thread = Thread { watcher.run(report: report, ended: ended) }
        thread.name = "canopy.netlink"
        thread.start()
        return watcher
    }

    private init(_ descriptors: Descriptors) {
        self.descriptors = Mutex(descriptors)
    }

    /// Asks the thread to close the socket and end; returns at once.
    func stop() {
        descriptors.withLock { descriptors in
            guard !descriptors.closed else { return }
            var byte: UInt8 = 1
            _ = write(descriptors.wakeWrite, &byte, 1)
        }
    }

    private func run(report: @Sendable (NetworkPathStatus) -> Void, ended: @Sendable () -> Void) {
        let (netlink, wake) = descriptors.withLock { ($0.netlink, $0.wakeRead) }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var watching = true
        while watching {
            if let addresses = InterfaceAddress.current() { report(NetworkPathStatus(addresses)) }
            watching = waitForMessages(netlink: netlink, wake: wake, buffer: &buffer)
        }
        descriptors.withLock { descriptors in
            close(descriptors.netlink)
            close(descriptors.wakeRead)
            close(descriptors.wakeWrite)
            descriptors.closed = true
        }
        ended()
    }

    /// Waits for messages and reads all there are; returns false when asked to stop or when the
    /// socket fails.
    private func waitForMessages(netlink: Int32, wake: Int32, buffer: inout [UInt8]) -> Bool {
        var polled = [
            pollfd(fd: netlink, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while poll(&polled, 2, -1) < 0 {
            guard errno == EINTR else { return false }
        }
        if polled[1].revents != 0 { return false }
        let size = buffer.count
        while true {
            let read = buffer.withUnsafeMutableBytes { recv(netlink, $0.baseAddress, size, Int32(MSG_DONTWAIT)) }
            if read > 0 { continue }
            if read == 0 { return false }
            switch errno {
            case EAGAIN, EWOULDBLOCK: return true
            case EINTR, ENOBUFS: continue
            default: return false
            }
        }
    }
}

/// A system call the network path watch could not make on Linux.
enum NetlinkError: Error, CustomStringConvertible {
    case call(String, errno: Int32)

    var description: String {
        switch self {
        case .call(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}
#endif
