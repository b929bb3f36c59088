import Synchronization

/// Reads a process's resident memory every `interval` until stopped and keeps the highest reading,
/// so a run can say how much memory the process needed at its worst, not only at the end.
///
/// ```swift
/// let memory = try PeakMemorySampler(pid: server.pid)
/// // … the run …
/// await memory.stop()
/// print(memory.peakBytes, memory.latestBytes)
/// ```
public final class PeakMemorySampler: Sendable {
    public let pid: Int32
    private let readings: Mutex<(peak: Int, latest: Int)>
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Reads once at once (so a process that cannot be read fails here), then starts sampling.
    public init(pid: Int32, interval: Duration = .milliseconds(100)) throws(ProcessResourceError) {
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
    public var peakBytes: Int { readings.withLock { $0.peak } }

    /// The last reading, in bytes.
    public var latestBytes: Int { readings.withLock { $0.latest } }

    /// Stops sampling; the readings stay.
    public func stop() async {
        guard let sampling = task.withLock({ $0.take() }) else { return }
        sampling.cancel()
        await sampling.value
    }
}
