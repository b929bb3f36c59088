import ArgumentParser
import Foundation
import GRDB

/// Raw SQLite upserts through GRDB: the ceiling a storage layer on SQLite could reach for the
/// `writes` load, to read the server's figure against.
struct Baseline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Raw batched SQLite upserts through GRDB at the server's durability (no server).",
        discussion: """
            Upserts rows keyed like the `writes` load (`load/w<writer>/k<0..999>`, an integer value) \\
            into a fresh WAL database with `synchronous = FULL` (an fsync per commit, as the server \\
            does), `--batch` rows per transaction, for `--duration` seconds, on one thread. It is what \\
            `writes --baseline` runs first.
            """)

    @Option(help: "Folder for the throwaway database file.") var folder: String
    @Option(help: "Writers whose keys are cycled through.") var writers = 100
    @Option(help: "Rows per transaction.") var batch = 3200
    @Option(help: "Seconds to run.") var duration: Double = 10
    @Flag(inversion: .prefixedNo, help: "fsync every commit (synchronous = FULL).") var fsync = true

    func validate() throws {
        guard writers > 0, batch > 0 else { throw ValidationError("--writers and --batch must be positive") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
    }

    func run() throws {
        let run = BaselineRun(
            folder: folder, writers: writers, keysPerWriter: 1000, batch: batch, duration: duration, fsync: fsync)
        _ = try run.measure()
    }
}

/// One baseline measurement; prints its figure and returns upserts per second.
struct BaselineRun {
    let folder: String
    let writers: Int
    let keysPerWriter: Int
    let batch: Int
    let duration: Double
    let fsync: Bool
    /// Where its lines go.
    var log: (String) -> Void = { report($0) }

    func measure() throws -> Double {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = (folder as NSString).appendingPathComponent(
            "baseline-\(ProcessInfo.processInfo.processIdentifier).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        var configuration = Configuration()
        configuration.journalMode = .wal
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: fsync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
            try db.execute(
                sql: "CREATE TABLE nodes (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID")
        }
        let keys = (0..<writers).flatMap { writer in (0..<keysPerWriter).map { "load/w\(writer)/k\($0)" } }
        log("baseline: raw GRDB upserts, \(batch) per transaction, fsync \(fsync ? "on" : "off"), for \(duration) s")
        let deadline = Date().addingTimeInterval(duration)
        let started = Date()
        var total = 0
        var commits = 0
        while Date() < deadline {
            try queue.write { db in
                let upsert = try db.cachedStatement(
                    sql:
                        "INSERT INTO nodes (path, value) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET value = excluded.value"
                )
                for offset in 0..<batch {
                    let number = total + offset
                    try upsert.execute(arguments: [keys[number % keys.count], String(number)])
                }
            }
            total += batch
            commits += 1
        }
        let elapsed = Date().timeIntervalSince(started)
        let rate = Double(total) / elapsed
        log(
            String(
                format: "baseline upserts: %d in %.2f s (%d commits) = %.0f upserts/s", total, elapsed, commits, rate))
        return rate
    }
}
