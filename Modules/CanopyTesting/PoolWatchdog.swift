import Dispatch
import Foundation
import Synchronization

/// Reports, on standard error, each time Swift's cooperative pool ran no task for 5 s or more in
/// the test process.
///
/// Every test's servers and clients run on that pool, one thread per core. A test that computes
/// for seconds without suspending holds a thread; on a 2-core CI machine two of them stop every
/// other test, whose clients then miss pings and hellos and fail far from the cause. A report
/// names the time, so a failure can be told apart from a server bug. The cure is
/// ``onOwnThread(_:)`` or a `Task.yield()` in the long loop.
enum PoolWatchdog {
    private static let lastBeat = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
    private static let started = Mutex(false)
    private static let limit: UInt64 = 5_000_000_000

    /// Starts watching, once per process.
    static func start() {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let origin = DispatchTime.now().uptimeNanoseconds
        Task.detached(priority: .high) {
            while true {
                lastBeat.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let thread = Thread {
            var stalledSince: UInt64?
            while true {
                Thread.sleep(forTimeInterval: 0.5)
                let now = DispatchTime.now().uptimeNanoseconds
                let beat = lastBeat.load(ordering: .relaxed)
                if now &- beat >= limit {
                    if stalledSince == nil { stalledSince = beat }
                } else if let since = stalledSince {
                    stalledSince = nil
                    let seconds = { (nanoseconds: UInt64) in String(format: "%.1f s", Double(nanoseconds) / 1e9) }
                    FileHandle.standardError.write(
                        Data(
                            ("canopy-test: Swift's cooperative pool ran no task for \(seconds(beat &- since)), "
                                + "from \(seconds(since &- origin)) after the first test server started: a test "
                                + "computed without suspending and held its threads\n").utf8))
                }
            }
        }
        thread.start()
    }
}
