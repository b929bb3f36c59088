public import Foundation
import Synchronization

/// Starts child processes one at a time.
///
/// Foundation's `Process.run()` on Linux is not safe to call from several threads at once: CI runs
/// crashed inside it (a bad pointer in `memmove`) while two tests launched binaries together.
/// Every launch in the tests goes through here.
public enum ProcessLauncher {
    private static let lock = Mutex(())

    /// Runs `process.run()` while no other launch is under way.
    public static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}
