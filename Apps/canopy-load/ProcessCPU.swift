import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time (user + system) used by a process, to say what a run cost the server and the load
/// generator on a machine where both share the cores.
enum ProcessCPU {
    /// This process's CPU time, in seconds.
    static func ownSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return user + system
    }

    /// The CPU time of process `pid` from `/proc/<pid>/stat` (fields 14 and 15, in clock ticks),
    /// in seconds; `nil` where there is no `/proc` or the process is gone.
    static func seconds(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // The command name (field 2) may hold spaces: count fields after its closing parenthesis,
        // where field 3 (the state) comes first.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds spent between two readings of ``seconds(of:)`` (`nil` when either is missing).
    static func spent(from earlier: Double?, to later: Double?) -> Double? {
        guard let earlier, let later else { return nil }
        return later - earlier
    }
}
