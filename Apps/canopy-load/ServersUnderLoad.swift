import ArgumentParser
import ProcessResources

/// The server a run loads, as processes whose CPU time and memory it reads: those the run started,
/// else the one `--server-pid` names; none for a server it knows only by its address.
struct ServersUnderLoad: Sendable {
    /// The processes the run started, in the order it started them.
    let launched: [LaunchedServer]
    /// `--server-pid`: a server the tool did not start.
    let givenPid: Int32?

    /// The process whose memory the run reads: the first it started, else `--server-pid`'s.
    var pid: Int32? { launched.first.map(\.pid) ?? givenPid }

    /// The CPU seconds the server used so far: the processes the run started together (one that is
    /// gone counts nothing), else `--server-pid`'s; `nil` when none can be read.
    func cpuSeconds() -> Double? {
        guard !launched.isEmpty else { return givenPid.flatMap(ProcessCPU.seconds(of:)) }
        let readings = launched.compactMap(\.cpuSeconds)
        return readings.isEmpty ? nil : readings.reduce(0, +)
    }

    /// Starts reading the server's resident memory every 100 ms, until stopped.
    func sampleMemory() throws -> PeakMemorySampler { try PeakMemorySampler(pid: requirePid()) }

    /// The server's resident memory now, in bytes.
    func residentBytes() throws -> Int { try ProcessMemory.residentBytes(of: requirePid()) }

    private func requirePid() throws(ValidationError) -> Int32 {
        guard let pid else { throw LaunchOptions.noServerProcess }
        return pid
    }
}
