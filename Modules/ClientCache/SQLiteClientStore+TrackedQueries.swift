import GRDB
public import Persistence
public import Tree

extension SQLiteClientStore {
    public func trackedQueries() throws(StoreError) -> [TrackedQuery] {
        try trackedQueries(where: "1", [])
    }

    public func trackedQueries(atOrAbove location: Path) throws(StoreError) -> [TrackedQuery] {
        var paths = [location.wireString]
        var current = location
        while let parent = current.parent {
            paths.append(parent.wireString)
            current = parent
        }
        let placeholders = Array(repeating: "?", count: paths.count).joined(separator: ", ")
        return try trackedQueries(where: "path IN (\(placeholders))", StatementArguments(paths))
    }

    public func trackedQueries(childrenOf location: Path) throws(StoreError) -> [TrackedQuery] {
        if location.isEmpty { return try trackedQueries(where: "path != '' AND instr(path, '/') = 0", []) }
        let prefix = location.wireString + "/"
        return try trackedQueries(
            where: "path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0",
            [prefix, location.wireString + "0", prefix.utf8.count + 1])
    }

    public func trackedQueries(below location: Path) throws(StoreError) -> [TrackedQuery] {
        if location.isEmpty { return try trackedQueries(where: "path != ''", []) }
        return try trackedQueries(
            where: "path >= ? AND path < ?", [location.wireString + "/", location.wireString + "0"])
    }

    public func trackedQuery(at location: Path, queryIdentifier: String) throws(StoreError) -> TrackedQuery? {
        try trackedQueries(where: "path = ? AND query_id = ?", [location.wireString, queryIdentifier]).first
    }

    public func nextTrackedQueryID() throws(StoreError) -> Int {
        try read("reading the tracked query ids") { db in
            try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(id) + 1, 0) FROM tracked_queries") ?? 0
        }
    }

    public func deactivateTrackedQueries() throws(StoreError) {
        try write("marking tracked queries inactive") { db in
            try db.execute(sql: "UPDATE tracked_queries SET active = 0 WHERE active = 1")
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    /// The tracked queries matching an SQL condition, columns read by index (this runs at start-up).
    private func trackedQueries(
        where condition: String, _ arguments: StatementArguments
    ) throws(StoreError) -> [TrackedQuery] {
        let rows = try read("reading tracked queries") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, path, query_id, params, last_use, complete, active FROM tracked_queries
                    WHERE \(condition) ORDER BY id
                    """,
                arguments: arguments)
        }
        var queries: [TrackedQuery] = []
        queries.reserveCapacity(rows.count)
        for row in rows {
            let id: Int = row[0]
            let paramsText: String = row[3]
            do {
                queries.append(
                    TrackedQuery(
                        id: id, path: try Path(validating: row[1] as String), queryIdentifier: row[2],
                        params: paramsText == "{}" ? [:] : try JSONValue(parsing: paramsText), lastUse: row[4],
                        isComplete: row[5], isActive: row[6]))
            } catch {
                throw .corruptData(file: path, row: "tracked_queries/\(id)", reason: "\(error)")
            }
        }
        return queries
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
