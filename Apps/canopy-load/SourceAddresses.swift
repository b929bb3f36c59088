import Foundation

/// The loopback source addresses a run's connections are bound to.
///
/// The connections from one source address to one server address and port share that source's
/// ephemeral ports (`net.ipv4.ip_local_port_range`, 28,232 by default): past them, `connect` fails
/// with `EADDRNOTAVAIL`. Against a server on a 127.x.x.x address, a run of more connections than fit
/// binds them to 127.0.0.1, 127.0.0.2, … in turn, `perAddress` each (loopback answers every 127/8
/// address); a smaller run, or one against another server, leaves the choice to the system.
struct SourceAddresses: Sendable {
    /// Connections bound to each address; `nil` when they are not bound.
    let perAddress: Int?

    init(connections: Int, server: String, perAddress limit: Int = SourceAddresses.portsPerAddress()) {
        perAddress = server.hasPrefix("127.") && connections > limit ? limit : nil
    }

    /// The address connection `index` is bound to, if any.
    func address(of index: Int) -> String? {
        guard let perAddress else { return nil }
        let number = 1 + index / perAddress
        return "127.0.\(number / 256).\(number % 256)"
    }

    /// Nine tenths of the system's ephemeral port range, leaving room for other sockets.
    static func portsPerAddress(rangeFile: String = "/proc/sys/net/ipv4/ip_local_port_range") -> Int {
        let text = (try? String(contentsOfFile: rangeFile, encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard bounds.count == 2, bounds[1] > bounds[0] else { return 20_000 }
        return (bounds[1] - bounds[0] + 1) * 9 / 10
    }
}
