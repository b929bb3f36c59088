import Foundation
import GRDB
public import Persistence
public import Tree

extension SQLiteClientStore {
    /// Sets up the writer connection so that the files take about what the store holds: pages freed
    /// by removals can go back to the file system (incremental auto-vacuum, which must be set
    /// before a new file's tables are made: GRDB runs this before it does anything else with the
    /// file), and the write-ahead log is checkpointed once it holds `journalLimitBytes` and cut
    /// back to that size when it starts over (instead of staying as large as it ever was).
    static func limitSpace(_ db: GRDB.Database, journalLimitBytes: Int) throws {
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        let pages = max(16, journalLimitBytes / max(pageSize, 512))
        try db.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)")
        try db.execute(sql: "PRAGMA journal_size_limit = \(journalLimitBytes)")
    }

    /// A file made before auto-vacuum was set keeps every page it ever used: it is rebuilt once,
    /// with incremental auto-vacuum (set on the writer by ``limitSpace(_:journalLimitBytes:)``),
    /// which also drops its free pages. SQLite cannot rebuild a file inside a transaction, so this
    /// runs after the migrations rather than as one.
    static func enableIncrementalVacuum(_ database: DatabasePool) throws {
        try database.writeWithoutTransaction { db in
            guard try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") != 2 else { return }
            try db.execute(sql: "VACUUM")
            try db.checkpoint(.truncate)
        }
    }

    /// The database file and its write-ahead log (the `-shm` index beside them, 32 KB, is not
    /// counted).
    public var bytesOnDisk: Int { Self.fileBytes(path) + Self.fileBytes(path + "-wal") }

    private static func fileBytes(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Moves the pages still in use over the free ones and cuts them off the file (in the log
    /// first), then checkpoints the log into the file and empties it. A read still using the log
    /// is waited for; if one still does after that, the log is emptied at a later checkpoint.
    public func reclaimSpace() throws(StoreError) {
        do {
            try database.writeWithoutTransaction { db in
                if try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0 > 0 {
                    try db.execute(sql: "PRAGMA incremental_vacuum")
                }
                do {
                    try db.checkpoint(.truncate)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                    return
                }
            }
        } catch {
            throw .sqlite(file: path, operation: "reclaiming free space", message: "\(error)")
        }
    }

    public func cachedBytes(under paths: [Path]) throws(StoreError) -> Int {
        let distinct = Set(paths)
        // The outermost locations: a row below two of them is counted once.
        let outermost = distinct.filter { path in !distinct.contains { $0 != path && $0.contains(path) } }
        return try read("measuring the cache below \(outermost.count) locations") { db in
            var total = 0
            for path in outermost {
                let (lower, upper) = CacheRow.subtree(path)
                total +=
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT COALESCE(SUM(\(CacheRow.bytesSQL)), 0)
                            FROM server_cache WHERE path >= ? AND path < ?
                            """,
                        arguments: [lower, upper]) ?? 0
            }
            return total
        }
    }
}
