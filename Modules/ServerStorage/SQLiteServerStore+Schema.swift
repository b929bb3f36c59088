import GRDB

extension SQLiteServerStore {
    /// The on-disk format, created and upgraded by named migrations run in order.
    ///
    /// `v1`:
    /// - `nodes(path, value)`: one row per leaf, keyed by its keys joined with `/` (no leading
    ///   slash; a leaf at the root has the path `""`), holding the leaf's JSON; and one row per
    ///   priority at `<path>/.priority` (`.priority` for the root) holding the priority's JSON.
    ///   `WITHOUT ROWID` clusters the rows by path, so a subtree is one range of the primary key:
    ///   `path >= 'a/' AND path < 'a0'` (`'0'` is the character after `'/'`, and keys never hold `/`).
    /// - `settings(name, value)`: small JSON documents such as the security rules.
    ///
    /// Since `v4-packed-records`, a small object the server holds packed (see `Node.packedText`) is
    /// one row at its path holding its compact JSON text (`{"name":"ada","score":36}`), in place
    /// of a row per leaf: the rows of an object never lie below a packed row.
    ///
    /// `v2-quarantine`: `quarantine(path, value, reason, quarantined_at)`, the rows of `nodes` that
    /// ``loadTree()`` could not decode, moved aside so that the rest of the database loads.
    ///
    /// `v3-write-ids`: `write_ids(client, highest, not_applied, seen)`, one row per client that
    /// named its writes with write ids, as ``StoredWriteIDs`` (`not_applied` is its
    /// ``StoredWriteIDs/notAppliedText``), changed in the transaction of the writes it records. A
    /// file of an earlier version gains the empty table when it is first opened.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE nodes (path TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                    CREATE TABLE settings (name TEXT PRIMARY KEY NOT NULL, value TEXT);
                    """)
        }
        migrator.registerMigration("v2-quarantine") { db in
            try db.execute(
                sql: """
                    CREATE TABLE quarantine (
                        path TEXT NOT NULL, value TEXT NOT NULL, reason TEXT NOT NULL, quarantined_at REAL NOT NULL);
                    """)
        }
        migrator.registerMigration("v3-write-ids") { db in
            try db.execute(
                sql: """
                    CREATE TABLE write_ids (
                        client TEXT PRIMARY KEY NOT NULL, highest INTEGER NOT NULL, not_applied TEXT,
                        seen INTEGER NOT NULL) WITHOUT ROWID;
                    """)
        }
        // No change to the tables: it marks a file whose `nodes` may hold packed rows, so that a
        // build that cannot read them refuses the file instead of setting those rows aside.
        migrator.registerMigration("v4-packed-records") { _ in }
        return migrator
    }
}

/// How locations map to rows of the `nodes` table.
package enum RowPath {
    /// The row that holds the priority of the location whose row path is `path`.
    package static func priority(of path: String) -> String {
        path.isEmpty ? ".priority" : path + "/.priority"
    }

    /// The row path of the child `key` of the location whose row path is `path`.
    package static func child(_ key: String, of path: String) -> String {
        path.isEmpty ? key : path + "/" + key
    }

    /// The row path of the parent of the location at `path`; `nil` for the root (`""`).
    package static func parent(of path: String) -> String? {
        if path.isEmpty { return nil }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(path[..<slash])
    }

    /// Bounds of the rows strictly below the non-root location `path`: `path >= lower AND path < upper`.
    package static func descendants(of path: String) -> (lower: String, upper: String) {
        (path + "/", path + "0")
    }
}
