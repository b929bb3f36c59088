import CanopyTesting
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An executable run to the end with its stdout and stderr each on a pseudo-terminal of its own or in
/// a file, as a person's shell or a pipe would have them: `isatty` is true for the terminal ones.
///
/// Each terminal is a separate pty, so that the two streams can be told apart. Its output
/// post-processing is off (no `\n` → `\r\n`), so what is read is byte for byte what the process
/// wrote. The process gets no controlling terminal, and `/dev/null` as stdin.
struct TerminalProcess: Sendable {
    /// Where a stream of the process goes.
    enum Sink: Sendable {
        case terminal
        case file
    }

    var status: Int32
    /// What the process wrote on stdout.
    var stdout: String
    /// What the process wrote on stderr.
    var stderr: String

    /// Runs `executable arguments` with `environment` added to this process's (less the variables that
    /// change `canopy`'s output or server: `NO_COLOR`, `CANOPY_*`) and `TERM=xterm-256color`.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        stdout: Sink = .terminal, stderr: Sink = .terminal, timeout: Duration = .seconds(120)
    ) async throws -> TerminalProcess {
        let outputCapture = try Output(stdout)
        let errorCapture: Output
        do {
            errorCapture = try Output(stderr)
        } catch {
            _ = await outputCapture.finish()
            throw error
        }
        var merged = ProcessInfo.processInfo.environment
        for name in ["CANOPY_DATABASE_URL", "CANOPY_TOKEN", "CANOPY_LOG_LEVEL", "NO_COLOR"] { merged[name] = nil }
        merged["TERM"] = "xterm-256color"
        var failure: (any Error)?
        var process: ChildProcess?
        do {
            let started = try ChildProcess.launch(
                executable, arguments, environment: merged.merging(environment) { $1 },
                standardOutput: .handle(outputCapture.handle), standardError: .handle(errorCapture.handle))
            process = started
            let deadline = ContinuousClock.now + timeout
            while started.isRunning, failure == nil {
                if Task.isCancelled {
                    failure = CancellationError()
                } else if ContinuousClock.now >= deadline {
                    failure = Failure.timedOut(executable)
                } else {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            if failure != nil {
                started.send(SIGKILL)
                await started.exit()
            }
        } catch {
            failure = error
        }
        // The terminals are closed (and their reading threads ended) whatever happened.
        let texts = await (outputCapture.finish(), errorCapture.finish())
        if case .timedOut = failure as? Failure {
            throw Failure.timedOut("\(executable); stdout: \(texts.0)\nstderr: \(texts.1)")
        }
        if let failure { throw failure }
        return TerminalProcess(status: process?.status ?? -1, stdout: texts.0, stderr: texts.1)
    }

    enum Failure: Error, CustomStringConvertible {
        case noTerminal(String)
        case timedOut(String)

        var description: String {
            switch self {
            case .noTerminal(let step): "could not open a pseudo-terminal: \(step)"
            case .timedOut(let what): "did not finish in time: \(what)"
            }
        }
    }

    /// One stream's destination: a pseudo-terminal read by a thread of its own, or a file.
    private enum Output {
        case terminal(PseudoTerminal)
        case file(String, FileHandle)

        init(_ sink: Sink) throws {
            switch sink {
            case .terminal:
                self = .terminal(try PseudoTerminal())
            case .file:
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-tty-\(UUID())").path
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
                self = .file(path, handle)
            }
        }

        /// What the child process writes to.
        var handle: FileHandle {
            switch self {
            case .terminal(let terminal): FileHandle(fileDescriptor: terminal.child, closeOnDealloc: false)
            case .file(_, let handle): handle
            }
        }

        /// Everything written, once the process ended; closes the terminal or removes the file.
        func finish() async -> String {
            switch self {
            case .terminal(let terminal):
                return await terminal.finish()
            case .file(let path, let handle):
                try? handle.close()
                let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(atPath: path)
                return text
            }
        }
    }
}

/// A pseudo-terminal pair: `child` is the terminal end given to the process, and a thread reads
/// what arrives on the other end until ``finish()``. Both ends are kept open until then, so that the
/// reads never depend on how the kernel reports the terminal end's last close.
private final class PseudoTerminal: Sendable {
    private let controller: Int32
    let child: Int32
    private let captured = Mutex<[UInt8]>([])
    private let stopRequested = Atomic<Bool>(false)
    private let readerDone = Atomic<Bool>(false)

    init() throws(TerminalProcess.Failure) {
        let functions = try PseudoTerminalFunctions()
        let controller = functions.open(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard controller >= 0 else { throw .noTerminal("posix_openpt: \(Self.lastError)") }
        var name = [CChar](repeating: 0, count: 128)
        guard functions.grant(controller) == 0, functions.unlock(controller) == 0,
            functions.name(controller, &name, name.count) == 0
        else {
            let reason = Self.lastError
            close(controller)
            throw .noTerminal("grantpt, unlockpt or ptsname_r: \(reason)")
        }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let child = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard child >= 0 else {
            let reason = Self.lastError
            close(controller)
            throw .noTerminal("open \(path): \(reason)")
        }
        var attributes = termios()
        if tcgetattr(child, &attributes) == 0 {
            attributes.c_oflag &= ~tcflag_t(ONLCR)
            _ = tcsetattr(child, TCSANOW, &attributes)
        }
        self.controller = controller
        self.child = child
        Thread.detachNewThread { [self] in readUntilStopped() }
    }

    private static var lastError: String { String(cString: strerror(errno)) }

    /// Reads until ``finish()`` asks it to stop and nothing more is waiting.
    private func readUntilStopped() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var descriptor = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 20)
            if ready > 0 {
                let count = buffer.withUnsafeMutableBytes { read(controller, $0.baseAddress, $0.count) }
                if count > 0 {
                    captured.withLock { $0.append(contentsOf: buffer[0..<count]) }
                    continue
                }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                break
            }
            if ready == 0, stopRequested.load(ordering: .acquiring) { break }
            if ready < 0, errno != EINTR { break }
        }
        readerDone.store(true, ordering: .releasing)
    }

    /// What arrived, once the process ended: reads what is left, then closes both ends.
    func finish() async -> String {
        stopRequested.store(true, ordering: .releasing)
        while !readerDone.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
        close(child)
        close(controller)
        return String(decoding: captured.withLock { $0 }, as: UTF8.self)
    }
}

/// `posix_openpt`, `grantpt`, `unlockpt` and `ptsname_r`. Glibc declares them only for
/// `_XOPEN_SOURCE` or `_GNU_SOURCE`, which Swift's Glibc module is built without, so there they are
/// looked up in the C library at run time.
private struct PseudoTerminalFunctions {
    let open: @convention(c) (Int32) -> Int32
    let grant: @convention(c) (Int32) -> Int32
    let unlock: @convention(c) (Int32) -> Int32
    let name: @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32

    #if canImport(Glibc)
    init() throws(TerminalProcess.Failure) {
        guard let library = dlopen(nil, RTLD_NOW) else { throw .noTerminal("dlopen of the C library") }
        func function<Function>(_ name: String, _ type: Function.Type) throws(TerminalProcess.Failure) -> Function {
            guard let symbol = dlsym(library, name) else { throw .noTerminal("\(name) not found in the C library") }
            return unsafeBitCast(symbol, to: type)
        }
        open = try function("posix_openpt", (@convention(c) (Int32) -> Int32).self)
        grant = try function("grantpt", (@convention(c) (Int32) -> Int32).self)
        unlock = try function("unlockpt", (@convention(c) (Int32) -> Int32).self)
        name = try function("ptsname_r", (@convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32).self)
    }
    #else
    init() throws(TerminalProcess.Failure) {
        open = { posix_openpt($0) }
        grant = { grantpt($0) }
        unlock = { unlockpt($0) }
        name = { ptsname_r($0, $1, $2) }
    }
    #endif
}
