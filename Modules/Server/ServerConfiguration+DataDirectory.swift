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
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw .dataDirectory(path: path, problem: "it does not exist and cannot be created (\(error))")
            }
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
}
