/// A process's memory as Linux counts it in `/proc/<pid>/status`.
///
/// ```swift
/// let memory = try ProcessMemory.read(pid: server.pid)   // this process's without a pid
/// print(memory.residentBytes, memory.peakResidentBytes)
/// ```
public struct ProcessMemory: Sendable, Equatable {
    /// The resident set now (`VmRSS`), in bytes.
    public var residentBytes: Int
    /// The highest resident set so far (`VmHWM`), in bytes: anonymous memory plus the pages of the
    /// binary and libraries mapped in.
    public var peakResidentBytes: Int
    /// Anonymous resident memory now (`RssAnon`): heap, buffers and stacks, in bytes.
    public var anonymousBytes: Int

    public init(residentBytes: Int, peakResidentBytes: Int, anonymousBytes: Int) {
        self.residentBytes = residentBytes
        self.peakResidentBytes = peakResidentBytes
        self.anonymousBytes = anonymousBytes
    }

    /// Reads the memory of process `pid` (this process when `nil`). Throws when the process is
    /// gone, and where there is no `/proc` (macOS).
    public static func read(pid: Int32? = nil) throws(ProcessResourceError) -> ProcessMemory {
        let process = pid.map(String.init) ?? "self"
        #if os(Linux)
        let path = "/proc/\(process)/status"
        guard let text = try? ProcFile.contents(of: path), let memory = ProcessMemory(status: text) else {
            throw .unreadable(what: "the memory of process \(process)", path: path)
        }
        return memory
        #else
        throw .unavailable(what: "the memory of process \(process)")
        #endif
    }

    /// The resident set of process `pid` (this process when `nil`) now (`VmRSS`), in bytes.
    public static func residentBytes(of pid: Int32? = nil) throws(ProcessResourceError) -> Int {
        try read(pid: pid).residentBytes
    }

    /// The figures of a `/proc/<pid>/status` text, whose lines read `VmRSS:	  1234 kB`; `nil` when
    /// one is missing (a process that has exited and not been reaped has none).
    init?(status text: String) {
        var kilobytes: [Substring: Int] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, ["VmRSS:", "VmHWM:", "RssAnon:"].contains(fields[0]), let value = Int(fields[1])
            else { continue }
            kilobytes[fields[0]] = value
        }
        guard let resident = kilobytes["VmRSS:"], let peak = kilobytes["VmHWM:"], let anonymous = kilobytes["RssAnon:"]
        else { return nil }
        self.init(residentBytes: resident * 1024, peakResidentBytes: peak * 1024, anonymousBytes: anonymous * 1024)
    }
}
