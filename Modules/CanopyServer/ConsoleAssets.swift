import Crypto
import Foundation

/// The console's files (HTML, CSS, JavaScript), read once from the server module's resource
/// bundle, which SwiftPM puts next to the binary (`canopy_CanopyServer.resources`).
///
/// The bundle is looked for here rather than through SwiftPM's generated `Bundle.module`, which
/// ends the process when the bundle is missing: a server installed without it still serves its
/// data, and the console answers where it looked.
struct ConsoleAssets: Sendable {
    /// One file: its bytes, content type and entity tag.
    struct Asset: Sendable {
        let bytes: [UInt8]
        let contentType: String
        let etag: String
    }

    /// The bundle's name SwiftPM gives the CanopyServer target's resources.
    static let bundleName = "canopy_CanopyServer"
    /// The folder inside the bundle that holds the console's files.
    static let folderName = "Console"

    /// Files by name (`index.html`, `console.js`, …).
    let files: [String: Asset]

    /// The console's files were not found.
    struct Missing: Error, Sendable {
        /// The folders looked in, in order.
        let searched: [String]

        var message: String {
            "The console's files were not found; looked in \(searched.joined(separator: ", "))"
                + " (the \(ConsoleAssets.bundleName).resources folder ships next to the canopy-server binary)"
        }
    }

    /// The files of the first folder of `candidates` that holds an `index.html`.
    static func load(from candidates: [URL]) -> Result<ConsoleAssets, Missing> {
        for folder in candidates {
            let index = folder.appendingPathComponent("index.html")
            guard FileManager.default.fileExists(atPath: index.path) else { continue }
            return .success(ConsoleAssets(files: files(in: folder)))
        }
        return .failure(Missing(searched: candidates.map(\.path)))
    }

    /// Every regular file directly in `folder` whose name has a known content type.
    private static func files(in folder: URL) -> [String: Asset] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var files: [String: Asset] = [:]
        for name in names {
            guard let contentType = contentType(of: name),
                let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
            else { continue }
            let digest = SHA256.hash(data: data).prefix(12).map { String(format: "%02x", $0) }.joined()
            files[name] = Asset(bytes: Array(data), contentType: contentType, etag: "\"\(digest)\"")
        }
        return files
    }

    private static func contentType(of name: String) -> String? {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        default: nil
        }
    }

    /// Where the bundle may be: next to the executable (symbolic links followed), in its resources
    /// on macOS, and next to the main bundle.
    static var bundleCandidates: [URL] {
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL {
            folders.append(executable.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        if let resources = Bundle.main.resourceURL { folders.append(resources) }
        folders.append(Bundle.main.bundleURL)
        var candidates: [URL] = []
        for folder in folders {
            for bundle in [
                "\(bundleName).resources", "\(bundleName).bundle", "\(bundleName).bundle/Contents/Resources",
            ] {
                let candidate = folder.appendingPathComponent(bundle).appendingPathComponent(folderName)
                if !candidates.contains(candidate) { candidates.append(candidate) }
            }
        }
        return candidates
    }

    /// The bundle next to this process's binary, read on first use.
    static let bundled: Result<ConsoleAssets, Missing> = load(from: bundleCandidates)
}
