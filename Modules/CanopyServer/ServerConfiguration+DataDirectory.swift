import Foundation

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
