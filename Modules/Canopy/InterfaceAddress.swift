#if os(Linux)
import Glibc

/// One address of a network interface, as `getifaddrs` lists it: what Linux's network path is
/// judged from.
struct InterfaceAddress: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// An IPv4 or IPv6 address other hosts can be reached from.
        case routable
        /// `169.254.0.0/16` or `fe80::/10`: only the link's own neighbours.
        case linkLocal
        /// No address, or not an IP one (an interface's link-layer entry).
        case other
    }

    let interface: String
    let isUp: Bool
    /// The kernel's `IFF_RUNNING`: the link has a carrier (or cannot tell, as loopback).
    let isRunning: Bool
    let isLoopback: Bool
    let kind: Kind

    /// Whether traffic to other hosts can go through it: a routable address on an interface other
    /// than loopback that is up and running.
    var carriesTraffic: Bool { isUp && isRunning && !isLoopback && kind == .routable }

    /// The addresses of every interface now, or `nil` when `getifaddrs` fails.
    static func current() -> [InterfaceAddress]? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var addresses: [InterfaceAddress] = []
        var next = list
        while let entry = next {
            let flags = Int(entry.pointee.ifa_flags)
            addresses.append(
                InterfaceAddress(
                    interface: String(cString: entry.pointee.ifa_name), isUp: flags & IFF_UP != 0,
                    isRunning: flags & IFF_RUNNING != 0, isLoopback: flags & IFF_LOOPBACK != 0,
                    kind: kind(of: entry.pointee.ifa_addr)))
            next = entry.pointee.ifa_next
        }
        return addresses
    }

    private static func kind(of address: UnsafeMutablePointer<sockaddr>?) -> Kind {
        guard let address else { return .other }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                withUnsafeBytes(of: ipv4.pointee.sin_addr) { (first: $0[0], second: $0[1]) }
            }
            return bytes.first == 169 && bytes.second == 254 ? .linkLocal : .routable
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                withUnsafeBytes(of: ipv6.pointee.sin6_addr) { (first: $0[0], second: $0[1]) }
            }
            return bytes.first == 0xfe && bytes.second & 0xc0 == 0x80 ? .linkLocal : .routable
        default:
            return .other
        }
    }
}

extension NetworkPathStatus {
    /// Satisfied when one of `addresses` carries traffic to other hosts.
    init(_ addresses: [InterfaceAddress]) {
        self = addresses.contains(where: \.carriesTraffic) ? .satisfied : .unsatisfied
    }
}
#endif
