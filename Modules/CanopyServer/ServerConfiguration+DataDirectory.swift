import Foundation
import Persistence

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ServerConfiguration {
    /// Creates the data folder if it is missing and checks that the server can create files in it,
    /// so that a bad folder is reported at start rather than as a failed first write. Does nothing
    /// when data is kept in memory.
    public func prepareDataDirectory() throws(StartupError) {
        guard let path = dataDirectory else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .dataDirectory(path: path, problem: "it is a file, not a folder")
            }
        } else {
            try Self.createFolder(path)
        }
        // Creating a file is the only test that holds for every user (root ignores permission bits).
        let probe = (path as NSString).appendingPathComponent(".canopy-write-check-\(getpid())")
        let descriptor = open(probe, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard descriptor >= 0 else {
            throw .dataDirectory(path: path, problem: "cannot create files in it (\(String(cString: strerror(errno))))")
        }
        close(descriptor)
        unlink(probe)
    }

    /// Creates `path` and the folders above it that are missing, one `mkdir` at a time, so that a
    /// failure names the folder that could not be made and the system's reason.
    private static func createFolder(_ path: String) throws(StartupError) {
        var missing: [String] = []
        var folder = path
        while !folder.isEmpty, folder != "/", !FileManager.default.fileExists(atPath: folder) {
            missing.append(folder)
            let parent = (folder as NSString).deletingLastPathComponent
            if parent == folder { break }
            folder = parent
        }
        for folder in missing.reversed() {
            guard mkdir(folder, 0o755) != 0, errno != EEXIST else { continue }
            let reason = String(cString: strerror(errno))
            let which = folder == path ? "" : " (making \(folder))"
            throw .dataDirectory(path: path, problem: "it does not exist and cannot be created\(which): \(reason)")
        }
    }
}

extension ServerConfiguration {
    /// The file in the data folder that the serving process holds locked.
    static let dataLockFile = "canopy.lock"

    /// Locks the data folder for this process, so that a second server started on the same folder
    /// is refused at start: both would hold the namespaces in memory and write the same files, and
    /// each would answer with what it alone wrote. Held until the returned lock is released or the
    /// process ends, also by a signal. `nil` when data is kept in memory.
    func lockDataDirectory() throws(StartupError) -> FileLock? {
        guard let path = dataDirectory else { return nil }
        let file = (path as NSString).appendingPathComponent(Self.dataLockFile)
        let lock: FileLock?
        do {
            lock = try FileLock(path: file, contents: "\(getpid())\n")
        } catch {
            throw .dataDirectory(path: path, problem: "\(error)")
        }
        guard let lock else {
            let holder = (try? String(contentsOfFile: file, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let process = holder.flatMap { Int32($0) }.map { " (process \($0))" } ?? ""
            throw .dataDirectory(
                path: path,
                problem: "another canopy-server\(process) is using it; stop that server, or give this one another "
                    + "--data (CANOPY_DATA)")
        }
        return lock
    }
}
