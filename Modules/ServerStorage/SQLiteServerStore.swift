import Foundation
import GRDB
public import Logging
public import Persistence
import Synchronization
public import Tree

/// A ``ServerStore`` in an SQLite file (WAL journal), one file per database.
///
/// ```swift
/// let store = try SQLiteServerStore(path: "data/main.sqlite")        // creates data/ if missing
/// try store.commit([StoredWrite(path: "users/ada", node: try Node(json: ["age": 36]))])
/// let tree = try store.loadTree()                                     // {"users":{"ada":{"age":36}}}
/// ```
///
/// The file holds one row per leaf, per packed object and per priority (see the migrations in
/// `SQLiteServerStore+Schema.swift`), so a commit costs O(d + n) primary-key operations for a write
/// of n leaves at depth d, whatever the size of the tree, and ``loadTree()`` reads every row once.
///
/// The store uses one connection (a GRDB `DatabaseQueue` in WAL mode): the server has a single
/// writer, the ``CommitQueue``, and reads only at startup and for settings, so a pool of readers
/// would buy nothing. Every call blocks its thread until SQLite is done (with ``Durability/full``
/// a commit includes an fsync); call it from a thread that may block, as ``CommitQueue`` does.
public final class SQLiteServerStore: ServerStore {
    /// The database file.
    public let path: String
    /// What a returned ``commit(_:)`` survives.
    public let durability: Durability
    private let database: DatabaseQueue
    /// Whether ``close()`` closed the connection; held while the connection is used, since GRDB
    /// hands SQLite a null connection after a close (reading a closed store crashed in
    /// `sqlite3_get_autocommit`).
    private let closed = Mutex(false)
    let logger: Logger

    /// Opens the database file at `path`, creating it and its parent folder if missing, and brings
    /// its format up to date. Throws ``StoreError/cannotOpen(file:reason:)``. `logger` hears about
    /// rows that ``loadTree()`` had to set aside.
    public init(
        path: String, durability: Durability = .full, logger: Logger = Logger(label: "canopy.store")
    ) throws(StoreError) {
        self.path = path
        self.durability = durability
        self.logger = logger
        do {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: path) { try Self.createFile(at: path) }
            var configuration = Configuration()
            configuration.journalMode = .wal
            configuration.label = "Canopy.SQLiteServerStore"
            database = try DatabaseQueue(path: path, configuration: configuration)
            // After the WAL setup, which sets `synchronous = NORMAL`.
            try database.writeWithoutTransaction { db in
                switch durability {
                case .full:
                    try db.execute(
                        sql: "PRAGMA synchronous = FULL; PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON")
                case .normal:
                    try db.execute(sql: "PRAGMA synchronous = NORMAL")
                }
            }
            if try database.read(Self.migrator.hasBeenSuperseded) {
                let applied = try database.read(Self.migrator.appliedIdentifiers).sorted()
                throw StoreError.cannotOpen(
                    file: path,
                    reason:
                        "it was written by a newer Canopy (it has the migrations \(applied.joined(separator: ", "))); "
                        + "run that version or newer")
            }
            try Self.migrator.migrate(database)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotOpen(file: path, reason: "\(error)")
        }
    }

    /// The whole stored tree, built bottom-up from every row in O(rows). On the project's 2-core VM,
    /// 100,000 leaves load in about 0.25 s of CPU (0.5 s wall on a busy machine), 1,000,000 in about
    /// 2 s of CPU.
    ///
    /// Loading is never all-or-nothing: a row that does not decode (a damaged file, or a value an
    /// older version stored, such as an overflowed `null`) is logged, moved to the `quarantine`
    /// table with the reason, and left out of the tree, so the rest of the namespace loads and the
    /// file agrees with the tree from then on. Throws ``StoreError/sqlite(file:operation:message:)``
    /// only when SQLite itself fails.
    public func loadTree() throws(StoreError) -> Node {
        let (loader, unreadable): (TreeLoader, [TreeLoaderError])
        do {
            (loader, unreadable) = try whileOpen { database in
                try database.read { db in
                    var loader = TreeLoader()
                    var unreadable: [TreeLoaderError] = []
                    let rows = try Row.fetchCursor(db, sql: "SELECT path, value FROM nodes ORDER BY path")
                    while let row = try rows.next() {
                        do throws(TreeLoaderError) {
                            try loader.add(path: row[0], value: row[1])
                        } catch {
                            unreadable.append(error)
                        }
                    }
                    return (loader, unreadable)
                }
            }
        } catch {
            throw failure("loading the tree", error)
        }
        if !unreadable.isEmpty { quarantine(unreadable) }
        return loader.build()
    }

    /// Moves unreadable rows out of `nodes` into `quarantine`, logging each.
    private func quarantine(_ rows: [TreeLoaderError]) {
        for row in rows {
            logger.error(
                "set aside an unreadable row; the rest of the database loads",
                metadata: ["file": "\(path)", "row": "\(row.row)", "value": "\(row.value)", "reason": "\(row.reason)"])
        }
        let now = Date().timeIntervalSince1970
        do {
            try whileOpen { database in
                try database.write { db in
                    for row in rows {
                        try db.execute(
                            sql: "INSERT INTO quarantine (path, value, reason, quarantined_at) VALUES (?, ?, ?, ?)",
                            arguments: [row.row, row.value, row.reason, now])
                        try db.execute(sql: "DELETE FROM nodes WHERE path = ?", arguments: [row.row])
                    }
                }
            }
        } catch {
            // The rows stay where they are and are set aside again at the next load.
            logger.error(
                "could not move unreadable rows to the quarantine table",
                metadata: ["file": "\(path)", "error": "\(error)"])
        }
    }

    /// The rows ``loadTree()`` set aside, oldest first: their path, stored text and why they did not
    /// decode.
    public func quarantinedRows() throws(StoreError) -> [(path: String, value: String, reason: String)] {
        do {
            return try whileOpen { database in
                try database.read { db in
                    try Row.fetchAll(
                        db, sql: "SELECT path, value, reason FROM quarantine ORDER BY quarantined_at, path"
                    )
                    .map { (path: $0[0], value: $0[1], reason: $0[2]) }
                }
            }
        } catch {
            throw failure("reading the quarantine table", error)
        }
    }

    /// Applies `writes` in order in one transaction; see ``ServerStore/commit(_:)``.
    ///
    /// Throws ``StoreError/invalidWrite(path:reason:)`` for a key the store cannot hold and
    /// ``StoreError/sqlite(file:operation:message:)`` when SQLite fails; either way nothing changed.
    public func commit(_ writes: [StoredWrite]) throws(StoreError) {
        try commit(writes, disconnects: [], writeIDs: [])
    }

    /// Applies `writes` and `writeIDs` in one transaction, as ``commit(_:)``; a process of its own
    /// keeps no onDisconnect operations, so `disconnects` are ignored.
    public func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        guard !writes.isEmpty || !writeIDs.isEmpty else { return }
        do {
            try whileOpen { database in
                try database.write { db in
                    var writer = try RowWriter(db)
                    for write in writes { try writer.apply(write) }
                    if !writeIDs.isEmpty { try Self.apply(writeIDs, in: db) }
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw failure("committing \(writes.count) write(s)", error)
        }
    }

    /// The settings document `name`, or `nil`.
    ///
    /// ```swift
    /// try store.setSetting("rules", [".read": true])
    /// try store.setting("rules")   // [".read": true]
    /// ```
    public func setting(_ name: String) throws(StoreError) -> JSONValue? {
        let text: String?
        do {
            text = try whileOpen { database in
                try database.read { db in
                    try String.fetchOne(db, sql: "SELECT value FROM settings WHERE name = ?", arguments: [name])
                }
            }
        } catch {
            throw failure("reading setting \"\(name)\"", error)
        }
        guard let text else { return nil }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw .corruptData(file: path, row: "settings/\(name)", reason: error.description)
        }
    }

    /// Stores the settings document `name` as JSON text; `nil` removes it.
    public func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError) {
        do {
            try whileOpen { database in
                try database.write { db in
                    if let value {
                        try db.execute(
                            sql: """
                                INSERT INTO settings (name, value) VALUES (?, ?)
                                ON CONFLICT (name) DO UPDATE SET value = excluded.value
                                """,
                            arguments: [name, value.serialized()])
                    } else {
                        try db.execute(sql: "DELETE FROM settings WHERE name = ?", arguments: [name])
                    }
                }
            }
        } catch {
            throw failure("writing setting \"\(name)\"", error)
        }
    }

    /// Closes the file (checkpointing the WAL into it). Every later call throws
    /// ``StoreError/sqlite(file:operation:message:)``. Optional: the store also closes when released.
    public func close() throws(StoreError) {
        do {
            try closed.withLock { closed in
                guard !closed else { return }
                try database.close()
                closed = true
            }
        } catch {
            throw failure("closing", error)
        }
    }

    /// Runs `body` with the connection unless the store is closed (then it throws
    /// ``StoreClosed``), keeping ``close()`` out meanwhile.
    func whileOpen<Value>(_ body: (DatabaseQueue) throws -> Value) throws -> Value {
        try closed.withLock { closed in
            guard !closed else { throw StoreClosed() }
            return try body(database)
        }
    }

    struct StoreClosed: Error {}

    /// The error for a failed `operation`; SQLite's own message for a closed connection ("out of
    /// memory") would mislead.
    func failure(_ operation: String, _ error: any Error) -> StoreError {
        let message = error is StoreClosed ? "the store is closed" : "\(error)"
        return .sqlite(file: path, operation: operation, message: message)
    }
}
