import Benchmark
import Foundation
import ServerStorage
import Tree

// What the commit thread does for a durable write: SQLite's statements for the write's rows, in one
// transaction per group commit, as under `canopy-load writes` (100 writers, about 500 writes per
// transaction, one number leaf each). Durability `.normal` (no fsync), so the figure is the CPU of
// the commit, not the disk's. Not among the suites whose allocation counts CI checks: SQLite's
// allocations there are its page cache's as much as the commit's.

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 20,
        maxDuration: .seconds(3),
        maxIterations: 10_000
    )

    Benchmark("SQLiteServerStore.commit of 512 one-leaf writes", configuration: configuration) {
        (benchmark: Benchmark, fixture: CommitFixture) in
        for _ in benchmark.scaledIterations { try fixture.commitNext() }
    } setup: {
        try CommitFixture()
    }
}

/// A namespace's SQLite file in a temporary folder, holding the rows a steady write load replaces,
/// and that load's writes in batches of 512.
final class CommitFixture {
    static let writers = 100
    static let keysPerWriter = 512
    static let batch = 512

    let folder: URL
    let store: SQLiteServerStore
    private let batches: [[StoredWrite]]
    private var next = 0

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-commit-\(UUID())")
        store = try SQLiteServerStore(path: folder.appendingPathComponent("bench.sqlite").path, durability: .normal)
        let paths = (0..<Self.writers * Self.keysPerWriter).map { index in
            Path(keys: ["load", ChildKey("w\(index % Self.writers)"), ChildKey("k\(index / Self.writers)")])
        }
        // Every row is there before the measured commits, which replace them (what the server
        // learns from its tree for such a write: a leaf without a priority, no leaf above).
        for start in stride(from: 0, to: paths.count, by: Self.batch) {
            try store.commit(
                paths[start..<start + Self.batch].map { StoredWrite(path: $0, node: Node(.number(0))) })
        }
        batches = stride(from: 0, to: paths.count, by: Self.batch).map { start in
            paths[start..<start + Self.batch].enumerated().map { offset, path in
                StoredWrite(
                    path: path, node: Node(.number(Double(start + offset))), nothingBelowLocation: true,
                    noLeafAbove: true)
            }
        }
    }

    func commitNext() throws {
        try store.commit(batches[next])
        next = (next + 1) % batches.count
    }

    deinit {
        try? store.close()
        try? FileManager.default.removeItem(at: folder)
    }
}
