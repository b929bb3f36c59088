import Foundation

/// What a process holds, read from `/proc` (Linux): open descriptors and resident memory. Tests of
/// the server's bounds assert on these instead of on timings.
///
/// ```swift
/// let files = ProcessResources.openFiles(under: folder)     // descriptors of this process into `folder`
/// let rss = try ProcessResources.residentBytes(of: pid)     // VmRSS of process `pid`
/// ```
public enum ProcessResources {
    /// The descriptors process `pid` (this one by default) has open on files under `folder`.
    public static func openFiles(under folder: String, pid: String = "self") -> [String] {
        let directory = "/proc/\(pid)/fd"
        let prefix = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path + "/"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")
            else { return nil }
            return target.hasPrefix(prefix) ? target : nil
        }
    }

    /// How many descriptors process `pid` has open.
    public static func descriptorCount(pid: String = "self") -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// The resident memory of process `pid` (`VmRSS`), in bytes.
    public static func residentBytes(pid: String = "self") throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw ProcessResourcesError.unreadable("VmRSS of process \(pid)") }
        return kilobytes * 1024
    }
}

/// A `/proc` entry that could not be read.
public enum ProcessResourcesError: Error, CustomStringConvertible {
    case unreadable(String)

    public var description: String {
        switch self {
        case .unreadable(let what): "cannot read \(what) from /proc"
        }
    }
}
