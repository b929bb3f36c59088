import Foundation
import GRDB
public import Persistence
import Synchronization
import Tree

/// A ``ClientStore`` in an SQLite file (WAL journal), one file per database, opened by one store at
/// a time. Reads run beside writes (a GRDB `DatabasePool`): a read sees what was committed when it
/// started and never waits for a write, such as one syncing to disk.
///
/// ```swift
/// let store = try SQLiteClientStore(path: "cache/demo.sqlite")
/// try store.overwriteServerCache(Node(json: ["ada": 36]), at: "users")
/// try store.serverCache(at: "users/ada")   // 36
/// ```
///
/// Cached server data is kept in rows by location (see the `v1` migration), so reading a location
/// reads the rows above, at and below it, and overwriting or pruning one costs the rows it
/// replaces. Writes are committed with a full sync (they survive power loss once saved); the cache
/// with a normal one (it survives the app's crash, and is only a cache).
///
/// A second store on the same file, in this process or another, is refused with
/// ``StoreError/inUse(file:)`` (a `flock` on `<path>.lock`).
///
/// The files take about what the store holds: the file is made with incremental auto-vacuum, so
/// ``reclaimSpace()`` gives the pages freed by removals back to the file system, and the
/// write-ahead log is checkpointed once it passes `journalLimitBytes` and cut back to it.
public final class SQLiteClientStore: ClientStore {
    /// The database file.
    public let path: String
    let database: DatabasePool
    private let lock: FileLock
    let sizes: Mutex<ClientStoreSize>
    /// Cached data is kept in rows under this many bytes of JSON where it can be: a larger node
    /// with children (and no priority) is stored as one row per child, recursively, so that a
    /// write below it reads a small row, not the whole node.
    let splitBytes: Int

    /// Opens the store at `path`, creating it and its folder if missing, and brings its format up to
    /// date (a file made without auto-vacuum is rebuilt once with it). The write-ahead log is
    /// checkpointed whenever it passes `journalLimitBytes`, and cut back to that size. Throws
    /// ``StoreError/inUse(file:)`` when another store has it open and
    /// ``StoreError/cannotOpen(file:reason:)`` for anything else (an unwritable folder, a file that
    /// is not a database).
    public convenience init(path: String, journalLimitBytes: Int = 4 * 1024 * 1024) throws(StoreError) {
        try self.init(path: path, splitBytes: 16 * 1024, journalLimitBytes: journalLimitBytes)
    }

    /// Closes the database and releases the file lock, so another store may open the file at once.
    public func close() {
        try? database.close()
        lock.release()
    }

    init(path: String, splitBytes: Int, journalLimitBytes: Int = 4 * 1024 * 1024) throws(StoreError) {
        self.path = path
        self.splitBytes = splitBytes
        do {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw .cannotOpen(file: path, reason: "cannot create its folder: \(error.localizedDescription)")
        }
        do {
            guard let lock = try FileLock(path: path + ".lock") else { throw StoreError.inUse(file: path) }
            self.lock = lock
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotOpen(file: path, reason: "\(error)")
        }
        do {
            var configuration = Configuration()
            configuration.journalMode = .wal
            configuration.label = "Canopy.SQLiteClientStore"
            // A checkpoint that empties the log waits for the reads still using it (they are short).
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                guard !db.configuration.readonly else { return }
                try Self.limitSpace(db, journalLimitBytes: journalLimitBytes)
            }
            database = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(database)
            try Self.enableIncrementalVacuum(database)
            let counters = try database.read { db in
                try Dictionary(
                    uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT name, value FROM counters").map {
                        (row: Row) -> (String, Int) in (row["name"], row["value"])
                    })
            }
            sizes = Mutex(
                ClientStoreSize(serverCache: counters["server_cache"] ?? 0, pendingWrites: counters["writes"] ?? 0))
        } catch {
            throw .cannotOpen(file: path, reason: "\(error)")
        }
    }

    public var size: ClientStoreSize { sizes.withLock { $0 } }

    // MARK: Settings

    public func setting(_ name: String) throws(StoreError) -> String? {
        try read("reading setting \(name)") { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE name = ?", arguments: [name])
        }
    }

    public func setSetting(_ name: String, _ value: String?) throws(StoreError) {
        try write("storing setting \(name)", durable: true) { db in
            if let value {
                try db.execute(
                    sql:
                        "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                    arguments: [name, value])
            } else {
                try db.execute(sql: "DELETE FROM settings WHERE name = ?", arguments: [name])
            }
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    // MARK: Transactions

    func read<T>(_ operation: String, _ body: (GRDB.Database) throws -> T) throws(StoreError) -> T {
        do {
            return try database.read(body)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .sqlite(file: path, operation: operation, message: "\(error)")
        }
    }

    /// Runs `body` in one transaction; it returns how the sizes changed, applied once committed.
    /// `durable` commits with a full sync.
    func write(
        _ operation: String, durable: Bool = false, _ body: (GRDB.Database) throws -> ClientStoreSize
    ) throws(StoreError) {
        do {
            let delta = try database.writeWithoutTransaction { db in
                if durable { try db.execute(sql: "PRAGMA synchronous = FULL") }
                defer { if durable { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
                var delta = ClientStoreSize(serverCache: 0, pendingWrites: 0)
                try db.inTransaction {
                    delta = try body(db)
                    if delta.serverCache != 0 { try Self.add(delta.serverCache, to: "server_cache", in: db) }
                    if delta.pendingWrites != 0 { try Self.add(delta.pendingWrites, to: "writes", in: db) }
                    return .commit
                }
                return delta
            }
            sizes.withLock { sizes in
                sizes.serverCache += delta.serverCache
                sizes.pendingWrites += delta.pendingWrites
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .sqlite(file: path, operation: operation, message: "\(error)")
        }
    }

    private static func add(_ delta: Int, to counter: String, in db: GRDB.Database) throws {
        try db.execute(
            sql: """
                INSERT INTO counters (name, value) VALUES (?, ?)
                ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
                """,
            arguments: [counter, delta])
    }
}
