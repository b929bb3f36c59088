import CanopyTesting
import Foundation
import ProcessResources
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `canopy` executable run as a child process against a test server, with its output and its
/// memory use.
final class CLIProcess: Sendable {
    let process: ChildProcess
    /// Where stdout and stderr go: files, not pipes, so that reading them never waits for an end of
    /// file that a process started meanwhile by another test may hold up (it inherits the pipe).
    private let outputPath: String
    private let errorPath: String
    private let ownsOutput: Bool
    private let meter = MemoryMeter()

    /// The most memory the process was seen to use (sampled every 10 ms from `/proc`).
    struct MemoryUse: Sendable, CustomStringConvertible {
        /// Peak resident set size (`VmHWM`): anonymous memory plus the mapped pages of the binary
        /// and libraries (about 40 MB for the debug binary, varying with the page cache).
        var peakResident = 0
        /// Most anonymous resident memory seen (`RssAnon`): the heap, buffers and stacks.
        var peakAnonymous = 0

        var description: String {
            "peak RSS \(peakResident / 1024) MB (VmHWM), of which anonymous \(peakAnonymous / 1024) MB (RssAnon)"
        }
    }

    /// Starts `canopy arguments` with `environment` added; stdout goes to `outputFile` when given.
    init(
        _ arguments: [String], environment: [String: String] = [:], input: Data? = nil, outputFile: String? = nil
    ) throws {
        guard let executable = Self.executable else { throw CLIError.notBuilt }
        var merged = ProcessInfo.processInfo.environment
        for name in ["CANOPY_DATABASE_URL", "CANOPY_TOKEN", "CANOPY_LOG_LEVEL", "NO_COLOR"] { merged[name] = nil }
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-cli-\(UUID())").path
        outputPath = outputFile ?? temporary + ".out"
        errorPath = temporary + ".err"
        ownsOutput = outputFile == nil
        for path in [outputPath, errorPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let stdin = Pipe()
        process = try ChildProcess.launch(
            executable, arguments, environment: merged.merging(environment) { $1 }, standardInput: .pipe(stdin),
            standardOutput: .file(outputPath), standardError: .file(errorPath))
        if let input { stdin.fileHandleForWriting.write(input) }
        try? stdin.fileHandleForWriting.close()
        let pid = process.pid
        let meter = meter
        let process = process
        Thread.detachNewThread {
            while process.isRunning {
                if let sample = Self.sample(pid) { meter.record(sample) }
                usleep(10_000)
            }
        }
    }

    deinit {
        if ownsOutput { try? FileManager.default.removeItem(atPath: outputPath) }
        try? FileManager.default.removeItem(atPath: errorPath)
    }

    /// Runs `canopy arguments` to the end.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], input: Data? = nil, outputFile: String? = nil,
        timeout: Duration = .seconds(120)
    ) async throws -> CLIProcess {
        let child = try CLIProcess(arguments, environment: environment, input: input, outputFile: outputFile)
        try await child.waitForExit(timeout: timeout)
        return child
    }

    /// Waits until the process ended.
    func waitForExit(timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.send(SIGKILL)
                throw CLIError.timedOut(stderr)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Sends `signal` (SIGINT: Ctrl-C).
    func send(_ signal: Int32) { process.send(signal) }

    var status: Int32 { process.status }
    /// What the process wrote on stdout so far.
    var stdout: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// What the process wrote on stderr so far.
    var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }
    var memoryUse: MemoryUse { meter.use }

    /// The lines printed on stdout so far (complete lines only).
    var lines: [String] {
        let text = stdout
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the part after the last newline
        return lines
    }

    /// Waits until the printed lines satisfy `condition`; returns whether they did within `timeout`.
    func waitForLines(timeout: Duration = .seconds(30), until condition: ([String]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(lines) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(lines)
    }

    /// The process's peak resident set (`VmHWM`) and anonymous memory now (`RssAnon`), in kB.
    private static func sample(_ pid: Int32) -> (resident: Int, anonymous: Int)? {
        guard let memory = try? ProcessMemory.read(pid: pid) else { return nil }
        return (memory.peakResidentBytes / 1024, memory.anonymousBytes / 1024)
    }

    /// The `canopy` binary built with the tests.
    static let executable = BuiltExecutable.locate("canopy")

    enum CLIError: Error, CustomStringConvertible {
        case notBuilt
        case timedOut(String)

        var description: String {
            switch self {
            case .notBuilt: "the canopy executable was not found beside the tests"
            case .timedOut(let stderr): "canopy did not finish in time; stderr: \(stderr)"
            }
        }
    }
}

/// The peaks of a child's memory samples.
private final class MemoryMeter: Sendable {
    private let peaks = Mutex(CLIProcess.MemoryUse())

    func record(_ sample: (resident: Int, anonymous: Int)) {
        peaks.withLock { use in
            use.peakResident = max(use.peakResident, sample.resident)
            use.peakAnonymous = max(use.peakAnonymous, sample.anonymous)
        }
    }

    var use: CLIProcess.MemoryUse { peaks.withLock { $0 } }
}

extension TestServer {
    /// `CANOPY_DATABASE_URL` for namespace `test` of this server.
    var cliEnvironment: [String: String] { ["CANOPY_DATABASE_URL": "\(baseURL)?ns=test"] }

    /// Runs `canopy arguments` against this server.
    func canopy(
        _ arguments: String..., input: Data? = nil, environment: [String: String] = [:]
    ) async throws -> CLIProcess {
        try await CLIProcess.run(arguments, environment: cliEnvironment.merging(environment) { $1 }, input: input)
    }
}
