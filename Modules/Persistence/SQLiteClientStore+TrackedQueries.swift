import GRDB
import Tree

extension SQLiteClientStore {
    public func trackedQueries() throws(StoreError) -> [TrackedQuery] {
        let rows = try read("reading tracked queries") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, path, query_id, params, last_use, complete, active FROM tracked_queries ORDER BY id")
        }
        return try rows.map { row throws(StoreError) in
            let id: Int = row["id"]
            do {
                return TrackedQuery(
                    id: id, path: try Path(validating: row["path"] as String), queryIdentifier: row["query_id"],
                    params: try JSONValue(parsing: row["params"] as String), lastUse: row["last_use"],
                    isComplete: row["complete"], isActive: row["active"])
            } catch {
                throw .corruptData(file: path, row: "tracked_queries/\(id)", reason: "\(error)")
            }
        }
    }

    public func saveTrackedQuery(_ query: TrackedQuery) throws(StoreError) {
        try write("saving tracked query \(query.id)") { db in
            try db.execute(
                sql: """
                    INSERT INTO tracked_queries (id, path, query_id, params, last_use, complete, active)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET path = excluded.path, query_id = excluded.query_id,
                        params = excluded.params, last_use = excluded.last_use, complete = excluded.complete,
                        active = excluded.active
                    """,
                arguments: [
                    query.id, query.path.wireString, query.queryIdentifier, query.params.serialized(), query.lastUse,
                    query.isComplete, query.isActive,
                ])
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    public func deleteTrackedQuery(id: Int) throws(StoreError) {
        try write("deleting tracked query \(id)") { db in
            try db.execute(sql: "DELETE FROM tracked_keys WHERE query_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM tracked_queries WHERE id = ?", arguments: [id])
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    public func trackedKeys(queryID: Int) throws(StoreError) -> Set<String> {
        try read("reading the keys of tracked query \(queryID)") { db in
            Set(try String.fetchAll(db, sql: "SELECT key FROM tracked_keys WHERE query_id = ?", arguments: [queryID]))
        }
    }

    public func setTrackedKeys(_ keys: Set<String>, queryID: Int) throws(StoreError) {
        try write("saving the keys of tracked query \(queryID)") { db in
            try db.execute(sql: "DELETE FROM tracked_keys WHERE query_id = ?", arguments: [queryID])
            for key in keys {
                try db.execute(
                    sql: "INSERT INTO tracked_keys (query_id, key) VALUES (?, ?)", arguments: [queryID, key])
            }
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }
}
