import Foundation
import ServerStorage
import Tree

/// A fresh folder under the system's temporary directory, removed when `body` returns.
func withTemporaryFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("canopy-persistence-tests-\(UUID().uuidString)", isDirectory: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

/// A store file inside a fresh temporary folder (in a subfolder that does not exist yet, so that
/// every test also checks that the store creates it).
func withStoreFile<T>(_ body: (String) async throws -> T) async throws -> T {
    try await withTemporaryFolder { folder in
        try await body(folder.appendingPathComponent("data/main.sqlite").path)
    }
}

extension StoredWrite {
    init(_ path: String, _ json: JSONValue) throws {
        self.init(path: Path(path), node: try Node(json: json))
    }
}

/// A small deterministic generator (SplitMix64), so that a failing random test can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
