public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program the tests start, spawned with `posix_spawn` rather than Foundation's `Process`.
///
/// On Linux, `Process.run()` lists `/proc/self/fd` to close the descriptors a child must not
/// inherit, copying 256 bytes of every directory entry; when the test process holds more than a
/// thousand descriptors (a suite of servers and their connections, side by side), the last entry
/// of a full read can sit at the end of its buffer, and the copy reads past it into an unmapped page
/// (swiftlang/swift-corelibs-foundation#5472: `Process.run()` crashed the whole suite in CI). Here
/// the child closes them with `posix_spawn_file_actions_addclosefrom_np`, and this process reads
/// nothing.
///
/// ```swift
/// let child = try ChildProcess.launch("/usr/bin/env", ["true"], standardOutput: .null)
/// await child.exit()   // child.status == 0
/// ```
public final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// This process's own.
        case inherited
        /// `/dev/null`.
        case null
        /// An open file: a file written to, a terminal.
        case handle(FileHandle)
        /// The file at this path, opened by the child to append to (for output) or to read.
        case file(String)
        /// One end of `pipe`: the reading end for standard input, the writing end for output; this
        /// process closes that end once the child has it.
        case pipe(Pipe)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exit(Int32)
        /// It was killed by this signal.
        case signal(Int32)
    }

    /// The child's process id.
    public let pid: pid_t
    private let ended = Mutex<Termination?>(nil)

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` with `arguments`, `environment` (this process's when `nil`) and, when
    /// given, `directory` as its working directory.
    public static func launch(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, standardInput: Stream = .null, standardOutput: Stream = .inherited,
        standardError: Stream = .inherited
    ) throws -> ChildProcess {
        // Darwin imports both as optional pointers, which its `_init` calls fill in.
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        try check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(&actions) }
        try check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(&attributes) }

        let streams = [(standardInput, STDIN_FILENO), (standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)]
        for (stream, target) in streams {
            switch stream {
            case .inherited:
                continue
            case .null:
                try check(
                    posix_spawn_file_actions_addopen(
                        &actions, target, "/dev/null", target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0),
                    "posix_spawn_file_actions_addopen")
            case .file(let path):
                try check(
                    posix_spawn_file_actions_addopen(
                        &actions, target, path, target == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_APPEND, 0),
                    "posix_spawn_file_actions_addopen \(path)")
            case .handle(let handle):
                try check(
                    posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target),
                    "posix_spawn_file_actions_adddup2")
            case .pipe(let pipe):
                let end = target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                try check(
                    posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target),
                    "posix_spawn_file_actions_adddup2")
            }
        }
        if let directory {
            try check(changeDirectory(&actions, directory), "posix_spawn_file_actions_addchdir_np")
        }
        // In a process group of its own, as Foundation starts one, and with no signal blocked (the
        // test process blocks some, and a child would inherit that).
        var flags = Int32(POSIX_SPAWN_SETPGROUP) | Int32(POSIX_SPAWN_SETSIGMASK)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #else
        try check(closeFrom(&actions, 3), "posix_spawn_file_actions_addclosefrom_np")
        #endif
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        try check(posix_spawnattr_setsigmask(&attributes, &unblocked), "posix_spawnattr_setsigmask")
        try check(posix_spawnattr_setflags(&attributes, Int16(flags)), "posix_spawnattr_setflags")

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid = pid_t()
        try check(posix_spawn(&pid, executable, &actions, &attributes, argv, envp), "posix_spawn \(executable)")
        for (stream, target) in streams {
            guard case .pipe(let pipe) = stream else { continue }
            try? (target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
        }
        return ChildProcess(pid: pid)
    }

    /// How the child ended, or `nil` while it runs.
    public var termination: Termination? {
        ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            guard result == pid else { return nil }
            // WIFEXITED and friends are C macros; the status layout is the same on Linux and Darwin.
            let signal = status & 0x7F
            ended = signal == 0 ? .exit((status >> 8) & 0xFF) : .signal(signal)
            return ended
        }
    }

    /// Whether the child still runs.
    public var isRunning: Bool { termination == nil }

    /// The exit status once it exited, the signal's number once a signal killed it, `-1` while it
    /// runs (as Foundation's `terminationStatus` gives).
    public var status: Int32 {
        switch termination {
        case .exit(let status), .signal(let status): status
        case nil: -1
        }
    }

    /// Sends `signal` while the child runs (once it ended, its process id may be another's).
    public func send(_ signal: Int32) {
        guard isRunning else { return }
        _ = kill(pid, signal)
    }

    /// Returns once the child ended.
    @discardableResult
    public func exit() async -> Termination {
        while true {
            if let termination { return termination }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Blocks the calling thread until the child ended.
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let termination { return termination }
            usleep(5_000)
        }
    }
}

/// A system call of ``ChildProcess`` failed.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let call: String
    public let code: Int32

    public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}

private func check(_ result: Int32, _ call: String) throws(ChildProcessError) {
    guard result == 0 else { throw ChildProcessError(call: call, code: result) }
}

#if canImport(Darwin)
private func changeDirectory(_ actions: inout posix_spawn_file_actions_t?, _ path: String) -> Int32 {
    posix_spawn_file_actions_addchdir_np(&actions, path)
}
#else
/// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34), which the Glibc module does not
/// declare: the child closes every descriptor from `lowest` up when it starts.
private func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) -> Int32 {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = glibcSymbol("posix_spawn_file_actions_addclosefrom_np") else { return ENOSYS }
    return unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
}

/// `posix_spawn_file_actions_addchdir_np` (glibc 2.29), not declared by the Glibc module either.
private func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) -> Int32 {
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    guard let symbol = glibcSymbol("posix_spawn_file_actions_addchdir_np") else { return ENOSYS }
    return path.withCString { unsafeBitCast(symbol, to: AddChdir.self)(&actions, $0) }
}

private func glibcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)
}
#endif
