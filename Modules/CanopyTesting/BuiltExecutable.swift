import Foundation

/// Finds an executable of this package built with the tests, so a test can run it as a process.
public enum BuiltExecutable {
    /// Where `name` is, if anywhere: at the path in `environmentVariable` when given and set, then
    /// beside the running test binary (the build products folder of whatever scratch path was
    /// used), then in the package's `.build/debug`. `packageFile` is the calling file, two folders
    /// below the package root.
    ///
    /// ```swift
    /// let probe = BuiltExecutable.locate("canopy-write-probe")
    /// ```
    public static func locate(
        _ name: String, environmentVariable: String? = nil, packageFile: String = #filePath
    ) -> String? {
        var candidates: [String] = []
        if let environmentVariable, let explicit = ProcessInfo.processInfo.environment[environmentVariable] {
            candidates.append(explicit)
        }
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        for bundle in Bundle.allBundles { folders.append(bundle.bundleURL.deletingLastPathComponent()) }
        let root = URL(fileURLWithPath: packageFile).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        folders.append(root.appendingPathComponent(".build/debug"))
        candidates += folders.map { $0.appendingPathComponent(name).path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
