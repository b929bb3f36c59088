import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts a process with `posix_spawn`, without handing it any descriptor of this one but its
/// standard input (`/dev/null`), output and error (the log).
///
/// Foundation's `Process` is not used for this: it crashed in `run()` while this tool held 10,000
/// sockets (the storm restarts the server then), and NIO's sockets are not close-on-exec, so a
/// plain spawn would hand every client socket to the new server.
enum Spawn {
    /// Starts `executable` with `arguments` and this process's environment; returns its pid.
    static func start(_ executable: String, arguments: [String], output: Int32) throws(LoadError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        guard posix_spawn_file_actions_init(&actions) == 0, posix_spawnattr_init(&attributes) == 0 else {
            throw .launchFailed(executable: executable, reason: "posix_spawn could not be set up")
        }
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        #if os(Linux)
        // glibc 2.34 and later; not in Swift's Glibc module, so looked up by name.
        guard let closeFrom = closeFrom else {
            throw .launchFailed(
                executable: executable,
                reason: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        _ = closeFrom(&actions, 3)
        #else
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT))
        #endif
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in environment { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard status == 0 else {
            throw .launchFailed(executable: executable, reason: String(cString: strerror(status)))
        }
        return pid
    }

    #if os(Linux)
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    private static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()
    #endif

    /// Whether `pid` has exited; reaps it if so.
    static func hasExited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid || (result == -1 && errno == ECHILD)
    }
}
