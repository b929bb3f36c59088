import GRDB
import Tree

extension SQLiteClientStore {
    /// The on-disk format, created and upgraded by named migrations run in order.
    ///
    /// `v1`:
    /// - `server_cache(path, value)`: the server's data by location. `path` is the location's keys
    ///   with a `/` before and after each (`/` for the root, `/users/ada/` below), so the rows below
    ///   a location are one range of the primary key (`path >= '/users/' AND path < '/users0'`).
    ///   `value` is the JSON (export format) of everything at that location when the row was
    ///   written; rows deeper down were written later and override it there. `null` records that
    ///   the location is empty (over an ancestor's older data).
    /// - `writes(id, path, kind, value)`: writes not yet acknowledged, `kind` `set` or `merge`.
    /// - `tracked_queries(id, path, query_id, params, last_use, complete, active)` and
    ///   `tracked_keys(query_id, key)`: the queries whose data is kept, and for a filtered one the
    ///   children it holds. `tracked_queries_by_use` finds the least recently used inactive ones.
    /// - `settings(name, value)`: the auth token, the client's id.
    /// - `counters(name, value)`: the bytes of `server_cache` and of `writes`, kept as they change.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE server_cache (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                    CREATE TABLE writes (
                        id INTEGER PRIMARY KEY NOT NULL, path TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('set', 'merge')), value TEXT NOT NULL);
                    CREATE TABLE tracked_queries (
                        id INTEGER PRIMARY KEY NOT NULL, path TEXT NOT NULL, query_id TEXT NOT NULL,
                        params TEXT NOT NULL, last_use REAL NOT NULL, complete INTEGER NOT NULL,
                        active INTEGER NOT NULL, UNIQUE (path, query_id));
                    CREATE INDEX tracked_queries_by_use ON tracked_queries (active, last_use);
                    CREATE TABLE tracked_keys (
                        query_id INTEGER NOT NULL REFERENCES tracked_queries (id) ON DELETE CASCADE,
                        key TEXT NOT NULL, PRIMARY KEY (query_id, key)) WITHOUT ROWID;
                    CREATE TABLE settings (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                    CREATE TABLE counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                    """)
        }
        // `v2`: `transactions(id, path, name, argument, apply_locally, put_write_id, put_value,
        // put_hash)`:
        // named transactions not finished yet, and the compare-and-set last sent for each (saved
        // before it is sent, so a restart resends it under the same write id instead of running
        // the transaction again).
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE transactions (
                        id INTEGER PRIMARY KEY NOT NULL, path TEXT NOT NULL, name TEXT NOT NULL, argument TEXT NOT NULL,
                        apply_locally INTEGER NOT NULL, put_write_id INTEGER, put_value TEXT, put_hash TEXT);
                    """)
        }
        // `v3`: `server_cache` gets a rowid, with `path` in a unique index: in a `WITHOUT ROWID`
        // table a large row sits in the primary key's b-tree, so every lookup that passes it reads
        // it whole; in the index only the paths are.
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE server_cache_v3 (
                        id INTEGER PRIMARY KEY NOT NULL, path TEXT NOT NULL UNIQUE, value TEXT NOT NULL);
                    INSERT INTO server_cache_v3 (path, value) SELECT path, value FROM server_cache ORDER BY path;
                    DROP TABLE server_cache;
                    ALTER TABLE server_cache_v3 RENAME TO server_cache;
                    """)
        }
        return migrator
    }
}

/// How locations map to rows of `server_cache`.
enum CacheRow {
    /// `/` for the root, `/a/b/` for `a/b`.
    static func key(_ path: Path) -> String {
        path.isEmpty ? "/" : "/" + path.wireString + "/"
    }

    /// Bounds of the rows at and below `path`: `path >= lower AND path < upper` (`'0'` follows
    /// `'/'`, and keys never hold `/`).
    static func subtree(_ path: Path) -> (lower: String, upper: String) {
        let key = key(path)
        return (key, String(key.dropLast()) + "0")
    }

    /// The rows strictly above `path`, root first.
    static func ancestors(_ path: Path) -> [String] {
        var keys: [String] = []
        var current = path
        while let parent = current.parent {
            keys.append(key(parent))
            current = parent
        }
        return keys.reversed()
    }

    /// The location of a row key.
    static func path(_ key: String) -> Path {
        Path(String(key.dropFirst().dropLast()))
    }

    /// Bytes a row takes, as the size counters count them.
    static func bytes(_ key: String, _ value: String) -> Int { key.utf8.count + value.utf8.count }

    /// ``bytes(_:_:)`` in SQL, for a row of `server_cache` or `writes`.
    static let bytesSQL = "length(CAST(path AS BLOB)) + length(CAST(value AS BLOB))"
}
