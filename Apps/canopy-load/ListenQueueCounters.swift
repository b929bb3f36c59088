import Foundation

/// The kernel's counters of connection attempts dropped at a listening socket (`ListenOverflows`,
/// `ListenDrops` in `/proc/net/netstat`): a full accept queue makes clients wait for a SYN
/// retransmission (1 s, then 3 s), which shows up in a storm's tail.
struct ListenQueueCounters {
    var overflows: Int
    var drops: Int

    /// The counters now; `nil` where `/proc/net/netstat` cannot be read.
    static func read() -> ListenQueueCounters? {
        guard let text = try? String(contentsOfFile: "/proc/net/netstat", encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n")
        for (offset, line) in lines.enumerated() where line.hasPrefix("TcpExt:") && offset + 1 < lines.count {
            let names = line.split(separator: " ")
            let values = lines[offset + 1].split(separator: " ")
            guard names.count == values.count,
                let overflows = names.firstIndex(of: "ListenOverflows").flatMap({ Int(values[$0]) }),
                let drops = names.firstIndex(of: "ListenDrops").flatMap({ Int(values[$0]) })
            else { continue }
            return ListenQueueCounters(overflows: overflows, drops: drops)
        }
        return nil
    }

    func since(_ earlier: ListenQueueCounters?) -> ListenQueueCounters? {
        guard let earlier else { return nil }
        return ListenQueueCounters(overflows: overflows - earlier.overflows, drops: drops - earlier.drops)
    }
}
