#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time (user + system) a process used: this process's from `getrusage`, another's from
/// `/proc/<pid>/stat` (Linux only), to say what a run cost the server and the load generator on
/// cores both share.
///
/// ```swift
/// let before = ProcessCPU.seconds(of: pid)
/// // … the run …
/// let spent = ProcessCPU.spent(from: before, to: ProcessCPU.seconds(of: pid))   // nil without /proc
/// ```
public enum ProcessCPU {
    /// This process's CPU time, in microseconds.
    public static func ownMicroseconds() -> Int {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000 + Int(usage.ru_utime.tv_usec)
            + Int(usage.ru_stime.tv_usec)
    }

    /// This process's CPU time, in seconds.
    public static func ownSeconds() -> Double { Double(ownMicroseconds()) / 1e6 }

    /// The CPU time of process `pid`, in seconds; `nil` where there is no `/proc` (macOS) or the
    /// process is gone.
    public static func seconds(of pid: Int32) -> Double? {
        #if os(Linux)
        guard let text = try? ProcFile.contents(of: "/proc/\(pid)/stat"), let ticks = clockTicks(stat: text) else {
            return nil
        }
        return Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        #else
        return nil
        #endif
    }

    /// CPU seconds spent between two readings of ``seconds(of:)`` (`nil` when either is missing).
    public static func spent(from earlier: Double?, to later: Double?) -> Double? {
        guard let earlier, let later else { return nil }
        return later - earlier
    }

    /// User plus system time in clock ticks, from the text of `/proc/<pid>/stat` (fields 14 and 15).
    static func clockTicks(stat text: String) -> Int? {
        // The command name (field 2) may hold spaces and parentheses: count fields after its last
        // closing parenthesis, where field 3 (the state) comes first.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }
}
