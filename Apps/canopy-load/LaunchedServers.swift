import Foundation

/// The canopy-server processes a run started (none when it drives a server started otherwise), and
/// the folder it made for their data folders, removed once they stopped.
struct LaunchedServers: Sendable {
    var list: [LaunchedServer]
    var folder: String?

    init(_ list: [LaunchedServer] = [], folder: String? = nil) {
        self.list = list
        self.folder = folder
    }

    /// Stops every one (SIGTERM) and removes the folders the run made.
    func shutDown() async {
        for server in list { await server.shutDown() }
        if let folder { try? FileManager.default.removeItem(atPath: folder) }
    }
}
