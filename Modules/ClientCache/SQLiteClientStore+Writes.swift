import GRDB
public import Persistence
import Tree

extension SQLiteClientStore {
    public func saveWrite(_ write: PersistedWrite) throws(StoreError) {
        try self.write("saving write \(write.id)", durable: true) { db in
            let removed = try Self.removeWrite(id: write.id, in: db)
            let value = write.json.serialized()
            try db.execute(
                sql: "INSERT INTO writes (id, path, kind, value) VALUES (?, ?, ?, ?)",
                arguments: [write.id, write.path.wireString, write.isMerge ? "merge" : "set", value])
            let added = CacheRow.bytes(write.path.wireString, value)
            return ClientStoreSize(serverCache: 0, pendingWrites: added - removed)
        }
    }

    public func removeWrite(id: Int) throws(StoreError) {
        try write("removing write \(id)") { db in
            ClientStoreSize(serverCache: 0, pendingWrites: -(try Self.removeWrite(id: id, in: db)))
        }
    }

    public func removeAllWrites() throws(StoreError) {
        try write("removing every write") { db in
            let removed =
                try Int.fetchOne(
                    db,
                    sql: "SELECT COALESCE(SUM(\(CacheRow.bytesSQL)), 0) FROM writes"
                ) ?? 0
            try db.execute(sql: "DELETE FROM writes")
            return ClientStoreSize(serverCache: 0, pendingWrites: -removed)
        }
    }

    public func writes() throws(StoreError) -> [PersistedWrite] {
        let rows = try read("reading the writes") { db in
            try Row.fetchAll(db, sql: "SELECT id, path, kind, value FROM writes ORDER BY id")
        }
        return try rows.map { row throws(StoreError) in
            let id: Int = row["id"]
            do {
                let path = try Path(validating: row["path"] as String)
                return PersistedWrite(
                    id: id, path: path, isMerge: (row["kind"] as String) == "merge",
                    json: try JSONValue(parsing: row["value"] as String))
            } catch {
                throw .corruptData(file: self.path, row: "writes/\(id)", reason: "\(error)")
            }
        }
    }

    /// Deletes write `id`; returns the bytes it took.
    private static func removeWrite(id: Int, in db: GRDB.Database) throws -> Int {
        let bytes =
            try Int.fetchOne(
                db, sql: "SELECT \(CacheRow.bytesSQL) FROM writes WHERE id = ?",
                arguments: [id]) ?? 0
        try db.execute(sql: "DELETE FROM writes WHERE id = ?", arguments: [id])
        return bytes
    }
}
