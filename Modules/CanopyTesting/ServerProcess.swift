import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real `canopy-server` executable running as a child process, for tests that must kill the
/// server outright (SIGKILL) and start it again on the same data.
///
/// The process is started with `--port 0`; its port is read from the `port=NNNN` metadata of its
/// "listening" log line.
public final class ServerProcess: Sendable {
    public let port: Int
    /// The address clients reach it at.
    public let host: String
    public let executable: String
    private let process: ChildProcess
    private let output: OutputCollector

    /// `http://HOST:PORT`.
    public var baseURL: String { "http://\(host):\(port)" }

    /// The process id (for reading what it holds from `/proc`).
    public var pid: Int32 { process.pid }

    /// The realtime URL for `namespace`, naming `lastSession` in `ls=` if given.
    public func webSocketURL(namespace: String, lastSession: String? = nil) -> String {
        "ws://\(host):\(port)/.ws?v=5&ns=\(namespace)" + (lastSession.map { "&ls=\($0)" } ?? "")
    }

    /// Everything the process wrote to stdout and stderr so far.
    public var log: String { output.text }

    /// The exit status once the process ended normally (`nil` while it runs or after a signal).
    public var exitStatus: Int32? {
        guard case .exit(let status) = process.termination else { return nil }
        return status
    }

    private init(port: Int, host: String, executable: String, process: ChildProcess, output: OutputCollector) {
        self.port = port
        self.host = host
        self.executable = executable
        self.process = process
        self.output = output
    }

    /// Starts `executable` with `--port 0 --data dataDirectory` and `arguments` (and `environment`
    /// added to this process's), and waits until it logs its port.
    ///
    /// `launcher` runs it through a command that then executes it in its place, such as
    /// ``NetworkNamespace/launcher`` (the process id stays the server's); `host` is where clients
    /// reach it.
    public static func start(
        executable: String, dataDirectory: String, arguments: [String] = [], environment: [String: String] = [:],
        launcher: [String] = [], host: String = "127.0.0.1", timeout: Duration = .seconds(60)
    ) async throws -> ServerProcess {
        let serverArguments = ["--port", "0", "--data", dataDirectory, "--log-level", "info"] + arguments
        let (process, output) =
            if let command = launcher.first {
                try launch(
                    command, arguments: launcher.dropFirst() + [executable] + serverArguments, environment: environment)
            } else {
                try launch(executable, arguments: serverArguments, environment: environment)
            }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let port = output.listeningPort {
                return ServerProcess(
                    port: port, host: host, executable: executable, process: process, output: output)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.send(SIGKILL)
        throw ServerProcessError.didNotStart(log: output.text)
    }

    /// Runs `executable` with exactly `arguments` until it exits (for options that make it stop at
    /// once, such as `--version` or a bad `--data`); returns its exit status and output. A process
    /// still running after `timeout` is killed and reported as ``ServerProcessError/didNotExit(log:)``.
    public static func run(
        executable: String, arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> (status: Int32, output: String) {
        let (process, output) = try launch(executable, arguments: arguments, environment: environment)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard !process.isRunning else {
            process.send(SIGKILL)
            throw ServerProcessError.didNotExit(log: output.text)
        }
        // The pipe may still hold the last of the output.
        while !output.isComplete, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return (process.status, output.text)
    }

    private static func launch(
        _ executable: String, arguments: [String], environment: [String: String]
    ) throws -> (ChildProcess, OutputCollector) {
        let pipe = Pipe()
        let process = try ChildProcess.launch(
            executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            standardOutput: .pipe(pipe), standardError: .pipe(pipe))
        let output = OutputCollector()
        // Read by a thread of its own with blocking reads, not `readabilityHandler`: its dispatch
        // source, torn down while short-lived processes come and go, crashed the test process once
        // in libdispatch's event loop (`_dispatch_event_loop_drain`, a bad pointer).
        let reader = pipe.fileHandleForReading
        let thread = Thread {
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                output.append(data)
            }
            try? reader.close()
            output.complete()
        }
        thread.start()
        return (process, output)
    }

    /// Kills the process with SIGKILL (no shutdown, no flush) and waits until it is gone.
    public func kill() async {
        process.send(SIGKILL)
        await process.exit()
    }

    /// Stops the process with SIGSTOP, as a long pause would (its sockets stay open), and returns
    /// once every one of its threads has stopped (on Linux, where `/proc` tells); ``resume()`` lets
    /// it go on.
    ///
    /// The signal is delivered asynchronously: a thread busy when it was sent can still run a
    /// moment, long enough to answer a request sent right after.
    public func pause() async {
        process.send(SIGSTOP)
        let tasks = "/proc/\(process.pid)/task"
        guard FileManager.default.fileExists(atPath: tasks) else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
            let stopped = threads.allSatisfy { thread in
                guard let stat = try? String(contentsOfFile: "\(tasks)/\(thread)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return false }
                // The state follows the parenthesised command name: `T` stopped, `t` traced.
                let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
                return state == "T" || state == "t"
            }
            if stopped && !threads.isEmpty { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Lets a process ``pause()`` stopped go on (SIGCONT).
    public func resume() {
        process.send(SIGCONT)
    }

    /// Asks the process to stop with SIGTERM and waits until it is gone.
    public func terminate() async {
        process.send(SIGTERM)
        await process.exit()
    }

    /// Where the `canopy-server` executable built with the tests is, if anywhere: see
    /// ``BuiltExecutable/locate(_:environmentVariable:packageFile:)`` (`CANOPY_SERVER_BINARY` first).
    public static func locateExecutable(packageFile: String = #filePath) -> String? {
        BuiltExecutable.locate("canopy-server", environmentVariable: "CANOPY_SERVER_BINARY", packageFile: packageFile)
    }
}

/// Why a ``ServerProcess`` could not start.
public enum ServerProcessError: Error, CustomStringConvertible {
    case didNotStart(log: String)
    case didNotExit(log: String)
    /// No `canopy-server` executable was found (see ``ServerProcess/locateExecutable(packageFile:)``).
    case notBuilt

    public var description: String {
        switch self {
        case .didNotStart(let log): "canopy-server did not log its port; its output:\n\(log)"
        case .didNotExit(let log): "canopy-server was still running; its output:\n\(log)"
        case .notBuilt: "canopy-server was not found: build it first (swift build --product canopy-server)"
        }
    }
}

/// Collects a child process's output as it arrives.
private final class OutputCollector: Sendable {
    private let data = Mutex(Data())
    private let ended = Mutex(false)

    func append(_ chunk: Data) { data.withLock { $0.append(chunk) } }

    /// Records that the process closed its output.
    func complete() { ended.withLock { $0 = true } }

    /// Whether the process closed its output (everything it wrote is in ``text``).
    var isComplete: Bool { ended.withLock { $0 } }

    var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The `port=NNNN` of the first log line that says it is listening.
    var listeningPort: Int? {
        for line in text.split(separator: "\n") where line.contains("listening") {
            guard let range = line.range(of: "port=") else { continue }
            let digits = line[range.upperBound...].prefix { $0.isNumber }
            if let port = Int(digits), port > 0 { return port }
        }
        return nil
    }
}
