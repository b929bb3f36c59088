import Foundation
import GRDB
import Testing
import Tree

@testable import ClientCache

/// The client store's files take about what it holds: freed pages go back to the file system, the
/// write-ahead log is kept near its limit, and a file made before either is converted.
struct SQLiteClientStoreSpaceTests {
    /// The size of the file at `path`, 0 when there is none.
    static func bytes(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    static func pragma(_ name: String, _ store: SQLiteClientStore) throws -> Int? {
        try store.database.read { try Int.fetchOne($0, sql: "PRAGMA \(name)") }
    }

    /// A string node of about `kilobytes` KB.
    static func block(_ seed: Int, kilobytes: Int) throws -> Node {
        try Node(json: .string(String(repeating: "\(seed % 10)", count: kilobytes * 1024)))
    }

    @Test func prunedDataGivesItsPagesBackAndTheLogIsEmptied() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            for index in 0..<40 {
                try store.overwriteServerCache(Self.block(index, kilobytes: 50), at: Path("q/\(index)"))
            }
            for index in 0..<36 { try store.pruneServerCache(at: Path("q/\(index)"), keeping: []) }
            #expect(try Self.pragma("freelist_count", store) ?? 0 > 400)

            try store.reclaimSpace()
            #expect(try Self.pragma("freelist_count", store) == 0)
            #expect(Self.bytes(of: file + "-wal") == 0)
            // 4 blocks of 50 KB are left.
            #expect(Self.bytes(of: file) < 300 * 1024, "\(Self.bytes(of: file)) bytes")
            #expect(store.bytesOnDisk == Self.bytes(of: file))
            #expect(try store.serverCache(at: "q/39") == Self.block(39, kilobytes: 50))
            #expect(try store.serverCache(at: "q/0").isEmpty)
        }
    }

    /// The log is emptied at a checkpoint once it passes its limit, and the file cut back to it.
    @Test func theWriteAheadLogStaysNearItsLimit() async throws {
        try await withStoreFile { file in
            let limit = 256 * 1024
            let store = try SQLiteClientStore(path: file, journalLimitBytes: limit)
            var largest = 0
            for index in 0..<60 {
                try store.overwriteServerCache(Self.block(index, kilobytes: 50), at: Path("q/\(index % 8)"))
                largest = max(largest, Self.bytes(of: file + "-wal"))
                #expect(store.bytesOnDisk == Self.bytes(of: file) + Self.bytes(of: file + "-wal"))
            }
            // The limit, and the pages of the write that passed it (50 KB and the pages above it).
            #expect(largest <= limit + 128 * 1024, "the log reached \(largest) bytes")
            #expect(largest > 0)
        }
    }

    /// A file made by an earlier version, without auto-vacuum and with free pages, is converted
    /// when opened: its free pages go back and later ones can.
    @Test func aFileWithoutAutoVacuumIsConvertedWithItsData() async throws {
        try await withStoreFile { file in
            do {
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: file).deletingLastPathComponent(), withIntermediateDirectories: true)
                var configuration = Configuration()
                configuration.journalMode = .wal
                let pool = try DatabasePool(path: file, configuration: configuration)
                try SQLiteClientStore.migrator.migrate(pool)
                let filler = String(repeating: "f", count: 20 * 1024)
                try await pool.write { db in
                    for index in 0..<100 {
                        try db.execute(
                            sql: "INSERT INTO server_cache (path, value) VALUES (?, ?)",
                            arguments: ["/old/\(index)/", "\"\(filler)\""])
                    }
                    try db.execute(sql: "DELETE FROM server_cache WHERE path != '/old/7/'")
                    let bytes = "/old/7/".utf8.count + filler.utf8.count + 2
                    try db.execute(
                        sql: "INSERT INTO counters (name, value) VALUES ('server_cache', ?)", arguments: [bytes])
                }
                #expect(try await pool.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 0)
                try pool.close()
            }
            #expect(Self.bytes(of: file) + Self.bytes(of: file + "-wal") > 1024 * 1024)

            let store = try SQLiteClientStore(path: file)
            #expect(try Self.pragma("auto_vacuum", store) == 2)
            #expect(try Self.pragma("freelist_count", store) == 0)
            #expect(store.bytesOnDisk < 200 * 1024, "\(store.bytesOnDisk) bytes")
            #expect(
                try store.serverCache(at: "old") == Node(json: ["7": .string(String(repeating: "f", count: 20 * 1024))])
            )
            #expect(store.size.serverCache == "/old/7/".utf8.count + 20 * 1024 + 2)
            store.close()

            // Converted once: a new file is made with it, and opening again changes nothing.
            let again = try SQLiteClientStore(path: file)
            #expect(try Self.pragma("auto_vacuum", again) == 2)
        }
    }

    @Test func aNewFileIsMadeWithIncrementalAutoVacuum() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            #expect(try Self.pragma("auto_vacuum", store) == 2)
        }
    }

    /// The data below locations, as the size counters count it, each row once.
    @Test func cachedBytesUnderLocations() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            try store.overwriteServerCache(Node(json: "aa"), at: "a/b")
            try store.overwriteServerCache(Node(json: "cc"), at: "a/c")
            try store.overwriteServerCache(Node(json: "x"), at: "ab")
            #expect(try store.cachedBytes(under: ["a"]) == ("/a/b/".utf8.count + 4) + ("/a/c/".utf8.count + 4))
            #expect(try store.cachedBytes(under: ["a", "a/b"]) == store.cachedBytes(under: ["a"]))
            #expect(try store.cachedBytes(under: ["a/b", "ab"]) == ("/a/b/".utf8.count + 4) + ("/ab/".utf8.count + 3))
            #expect(try store.cachedBytes(under: [.root]) == store.size.serverCache)
            #expect(try store.cachedBytes(under: []) == 0)
        }
    }
}
