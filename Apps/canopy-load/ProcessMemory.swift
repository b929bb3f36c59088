import ArgumentParser
import Foundation
import Synchronization

/// The resident memory of a process, read from `/proc/<pid>/status` (Linux only).
enum ProcessMemory {
    /// The resident memory of process `pid` (VmRSS), in bytes.
    static func residentBytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw ValidationError("cannot read VmRSS of process \(pid)") }
        return kilobytes * 1024
    }
}

/// Reads a process's resident memory every `interval` until stopped and keeps the highest reading,
/// so a run can say how much memory the server needed at its worst, not only at the end.
final class PeakMemorySampler: Sendable {
    let pid: Int32
    private let readings: Mutex<(peak: Int, latest: Int)>
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Reads once at once (so a pid that cannot be read fails here), then starts sampling.
    init(pid: Int32, interval: Duration = .milliseconds(100)) throws {
        self.pid = pid
        let first = try ProcessMemory.residentBytes(of: pid)
        readings = Mutex((peak: first, latest: first))
        let sampling = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self else { return }
                // The process may be gone (stopped at the end): keep what was read.
                guard let bytes = try? ProcessMemory.residentBytes(of: pid) else { continue }
                self.readings.withLock { $0 = (max($0.peak, bytes), bytes) }
            }
        }
        task.withLock { $0 = sampling }
    }

    /// The highest reading so far, in bytes.
    var peakBytes: Int { readings.withLock { $0.peak } }

    /// The last reading, in bytes.
    var latestBytes: Int { readings.withLock { $0.latest } }

    func stop() async {
        guard let sampling = task.withLock({ $0.take() }) else { return }
        sampling.cancel()
        await sampling.value
    }
}
