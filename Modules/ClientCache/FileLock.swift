import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a file, held until the lock is released: a second
/// holder, in this process or another, is refused at once rather than made to wait.
final class FileLock: Sendable {
    /// The locked file's descriptor, `nil` once released.
    private let descriptor: Mutex<Int32?>

    /// Locks `path`, creating the file if missing; `nil` when someone else holds the lock.
    /// Throws the `errno` description when the file cannot be opened.
    init?(path: String) throws(FileLockError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileLockError(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Releases the lock now rather than when the lock is deallocated; later calls do nothing.
    func release() {
        descriptor.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    deinit { release() }
}

/// A lock file that could not be opened.
struct FileLockError: Error, CustomStringConvertible {
    var path: String
    var errno: Int32

    var description: String { "cannot open lock file \"\(path)\": \(String(cString: strerror(errno)))" }
}
