import Foundation

/// The files a process holds open, from the links in `/proc/<pid>/fd` (Linux only).
///
/// ```swift
/// let held = OpenFiles.paths(under: folder)   // this process's descriptors into `folder`
/// ```
public enum OpenFiles {
    /// The paths of the files process `pid` (this process when `nil`) has open under `folder`;
    /// none where there is no `/proc` (macOS) or the process is gone.
    public static func paths(under folder: String, pid: Int32? = nil) -> [String] {
        let directory = "/proc/\(pid.map(String.init) ?? "self")/fd"
        let prefix = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path + "/"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")
            else { return nil }
            return target.hasPrefix(prefix) ? target : nil
        }
    }
}
