import Dispatch
import Foundation
import NIOCore
import NIOPosix
import ProcessResources
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server process this tool started (canopy-server, redis-server). Every one still running is
/// killed when the tool ends, also on Ctrl-C, so no run leaves a server behind.
final class ChildProcess: Sendable {
    let name: String
    let pid: Int32
    /// Where its standard output and error go.
    let logPath: String
    /// Where this run's output starts in the log file (earlier runs' output comes before).
    private let logOffset: UInt64
    private let exited = Mutex(false)

    private init(name: String, pid: Int32, logPath: String, logOffset: UInt64) {
        self.name = name
        self.pid = pid
        self.logPath = logPath
        self.logOffset = logOffset
    }

    /// Starts `executable` with `arguments`, its output appended to `logPath`.
    static func launch(
        _ name: String, executable: String, arguments: [String], logPath: String
    ) throws(LoadError) -> ChildProcess {
        let files = FileManager.default
        if !files.fileExists(atPath: logPath) { _ = files.createFile(atPath: logPath, contents: nil) }
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw .launchFailed(executable: executable, reason: "cannot write its log file \(logPath)")
        }
        defer { try? log.close() }
        let offset = (try? log.seekToEnd()) ?? 0
        let pid = try Spawn.start(executable, arguments: arguments, output: log.fileDescriptor)
        let child = ChildProcess(name: name, pid: pid, logPath: logPath, logOffset: offset)
        Reaper.shared.add(child)
        return child
    }

    /// Whether the process still runs (it is reaped once it has ended).
    var isRunning: Bool {
        exited.withLock { exited in
            if !exited { exited = Spawn.hasExited(pid) }
            return !exited
        }
    }

    /// CPU time the process used so far, in seconds (`nil` once it is gone or without `/proc`).
    var cpuSeconds: Double? { ProcessCPU.seconds(of: pid) }

    /// Sends `signal` and waits until the process is gone.
    func stop(_ signal: Int32 = SIGKILL) async {
        if isRunning { _ = kill(pid, signal) }
        while isRunning { try? await Task.sleep(for: .milliseconds(2)) }
        Reaper.shared.remove(self)
    }

    /// Waits until something accepts TCP connections at `host:port`, or the process ended, or
    /// `timeout` passed; returns whether it accepts.
    func waitUntilAccepting(host: String, port: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, isRunning {
            if await Self.accepts(host: host, port: port) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// Waits until the process wrote `marker` to its log, or ended, or `timeout` passed; returns
    /// whether it wrote it. Unlike connecting to it, this does not wait in a full accept queue.
    func waitForOutput(_ marker: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        guard let log = FileHandle(forReadingAtPath: logPath) else { return false }
        defer { try? log.close() }
        try? log.seek(toOffset: logOffset)
        var text = ""
        while ContinuousClock.now < deadline {
            if let data = try? log.readToEnd() { text += String(decoding: data, as: UTF8.self) }
            if text.contains(marker) { return true }
            guard isRunning else { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    /// Whether a TCP connection to `host:port` succeeds now.
    static func accepts(host: String, port: Int) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(500))
                .connect(host: host, port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }

    /// The folder this executable is in: sibling tools are looked for there first.
    static var ownFolder: String? {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return (path as NSString).deletingLastPathComponent
        }
        #endif
        return Bundle.main.executableURL?.deletingLastPathComponent().path
    }

    /// The first executable named `name` in `folders`, then on `PATH`.
    static func locate(_ name: String, preferring folders: [String]) throws(LoadError) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let searched = folders + path.split(separator: ":").map(String.init)
        for folder in searched {
            let candidate = (folder as NSString).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw .executableNotFound(name: name, searched: searched)
    }
}

/// Kills the child processes still running when the tool exits or is interrupted.
private final class Reaper: Sendable {
    static let shared = Reaper()
    private let children = Mutex<[Int32: ChildProcess]>([:])
    /// Kept so that the handlers stay installed.
    private let signalSources: Mutex<[any DispatchSourceSignal]>

    private init() {
        atexit { Reaper.shared.killAll() }
        signalSources = Mutex(Self.handleSignals())
    }

    /// On SIGINT, SIGTERM or SIGHUP: kills the children, then exits as the signal would have.
    private static func handleSignals() -> [any DispatchSourceSignal] {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Reaper.shared.killAll()
                exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
        return sources
    }

    func add(_ child: ChildProcess) { children.withLock { $0[child.pid] = child } }

    func remove(_ child: ChildProcess) { children.withLock { $0[child.pid] = nil } }

    func killAll() {
        for pid in children.withLock({ Array($0.keys) }) { kill(pid, SIGKILL) }
    }
}
