import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a file, held until the lock is released or the process
/// ends (also by a signal): a second holder, in this process or another, is refused at once rather
/// than made to wait. Used for a client cache's file and a server's data folder.
package final class FileLock: Sendable {
    /// The locked file's descriptor, `nil` once released.
    private let descriptor: Mutex<Int32?>

    /// Locks `path`, creating the file if missing; `nil` when someone else holds the lock.
    /// Once locked, the file's text becomes `contents` when given (such as the holder's process id,
    /// for the message of the next one refused). Throws the `errno` description when the file
    /// cannot be opened or locked for another reason (a file system without `flock`), so that such
    /// a failure is not taken for another holder.
    package init?(path: String, contents: String? = nil) throws(FileLockError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileLockError(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { return nil }
            throw FileLockError(path: path, errno: code)
        }
        if let contents {
            let bytes = Array(contents.utf8)
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
            guard written == bytes.count, ftruncate(descriptor, off_t(bytes.count)) == 0 else {
                let code = errno
                close(descriptor)
                throw FileLockError(path: path, errno: code)
            }
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Releases the lock now rather than when the lock is deallocated; later calls do nothing.
    package func release() {
        descriptor.withLock { descriptor in
            // Unlocked before it is closed: a child process started meanwhile by another thread
            // holds a copy of the descriptor until it runs its program, and closing ours alone
            // would leave the lock held by that copy (a store reopened at once was refused).
            if let open = descriptor {
                flock(open, LOCK_UN)
                close(open)
            }
            descriptor = nil
        }
    }

    deinit { release() }
}

/// A lock file that could not be opened or written.
package struct FileLockError: Error, CustomStringConvertible {
    package var path: String
    package var errno: Int32

    package var description: String { "cannot use lock file \"\(path)\": \(String(cString: strerror(errno)))" }
}
