import Foundation
import Testing

@testable import Persistence

#if canImport(Glibc)
import Glibc
#endif

/// The advisory lock a store holds on its file.
struct FileLockTests {
    #if os(Linux)
    /// A copy of the lock's descriptor (what a child process started by another thread holds until
    /// it runs its program) does not keep the lock once it is released: the file can be locked again
    /// at once.
    @Test func aReleasedLockIsFreeWhileACopyOfItsDescriptorIsOpen() async throws {
        try await withStoreFile { file in
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: file).deletingLastPathComponent(), withIntermediateDirectories: true)
            let path = file + ".lock"
            let lock = try #require(try FileLock(path: path))
            #expect(try FileLock(path: path) == nil)
            let copy = try #require(Self.duplicateDescriptor(of: path))
            defer { close(copy) }
            lock.release()
            #expect(try FileLock(path: path) != nil)
        }
    }

    /// A duplicate of this process's open descriptor for `path`, found in `/proc/self/fd`.
    private static func duplicateDescriptor(of path: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for entry in entries {
            guard let descriptor = Int32(entry),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"),
                target == path
            else { continue }
            let copy = dup(descriptor)
            return copy >= 0 ? copy : nil
        }
        return nil
    }
    #endif
}
