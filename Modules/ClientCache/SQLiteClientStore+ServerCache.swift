import GRDB
public import Persistence
public import Tree

extension SQLiteClientStore {
    public func serverCache(at path: Path) throws(StoreError) -> Node {
        let rows = try read("reading the cache at /\(path.wireString)") { db in
            try Self.rows(at: path, in: db)
        }
        return try Self.node(at: path, from: rows, file: self.path)
    }

    public func overwriteServerCache(_ node: Node, at path: Path) throws(StoreError) {
        let split = splitBytes
        try write("caching data at /\(path.wireString)") { db in
            try Self.replace(at: path, with: node, splitBytes: split, in: db)
        }
    }

    public func mergeServerCache(_ children: [Path: Node], at path: Path) throws(StoreError) {
        let split = splitBytes
        try write("caching an update at /\(path.wireString)") { db in
            var delta = ClientStoreSize(serverCache: 0, pendingWrites: 0)
            for (relative, node) in children {
                delta.serverCache += try Self.replace(at: path.child(relative), with: node, splitBytes: split, in: db)
                    .serverCache
            }
            return delta
        }
    }

    public func pruneServerCache(at path: Path, keeping: [Path]) throws(StoreError) {
        let file = self.path
        let split = splitBytes
        try write("pruning the cache at /\(path.wireString)") { db in
            let kept = try keeping.filter { path.contains($0) }.map { keptPath in
                (keptPath, try Self.node(at: keptPath, from: Self.rows(at: keptPath, in: db), file: file))
            }
            var delta = try Self.replace(at: path, with: .empty, splitBytes: split, in: db)
            for (keptPath, node) in kept where !node.isEmpty {
                delta.serverCache += try Self.replace(at: keptPath, with: node, splitBytes: split, in: db).serverCache
            }
            return delta
        }
    }

    // MARK: Rows

    /// The rows above, at and below `path`, in key order (so each row overrides those before it
    /// where they overlap).
    private static func rows(at path: Path, in db: GRDB.Database) throws -> [(key: String, value: String)] {
        let ancestors = CacheRow.ancestors(path)
        let (lower, upper) = CacheRow.subtree(path)
        let placeholders = Array(repeating: "?", count: ancestors.count).joined(separator: ", ")
        let above = ancestors.isEmpty ? "" : "path IN (\(placeholders)) OR "
        var arguments = StatementArguments(ancestors)
        arguments += [lower, upper]
        return try Row.fetchAll(
            db, sql: "SELECT path, value FROM server_cache WHERE \(above)(path >= ? AND path < ?) ORDER BY path",
            arguments: arguments
        ).map { ($0["path"], $0["value"]) }
    }

    /// The data at `path` that `rows` (from ``rows(at:in:)``) hold.
    private static func node(
        at path: Path, from rows: [(key: String, value: String)], file: String
    ) throws(StoreError) -> Node {
        var node = Node.empty
        for (key, value) in rows {
            let rowPath = CacheRow.path(key)
            let rowNode: Node
            do {
                rowNode = try Node(jsonText: value)
            } catch {
                throw .corruptData(file: file, row: key, reason: error.description)
            }
            if rowPath.contains(path) {
                node = rowNode.child(at: Path.relative(from: rowPath, to: path))
            } else {
                node = node.updating(at: Path.relative(from: path, to: rowPath), to: rowNode)
            }
        }
        return node
    }

    /// Puts `node` at `path` as ``Node/updating(at:to:)`` would: when the cached data at a location
    /// above `path` is a leaf, that leaf turns into a node with children, so the row goes there
    /// (rows are read in location order, not in the order they were written, so a row below a leaf
    /// would be laid over the leaf that no longer exists). Thus no row is ever below a cached leaf.
    /// Only the deepest row above `path` is read, and rows are split (see ``splitBytes``), so this
    /// costs at most a row's size, however much is cached around `path`. Returns the size change.
    @discardableResult
    private static func replace(
        at path: Path, with node: Node, splitBytes: Int, in db: GRDB.Database
    ) throws -> ClientStoreSize {
        let ancestors = CacheRow.ancestors(path)
        if !ancestors.isEmpty {
            let placeholders = Array(repeating: "?", count: ancestors.count).joined(separator: ", ")
            let deepest = try Row.fetchOne(
                db,
                sql: "SELECT path, value FROM server_cache WHERE path IN (\(placeholders)) ORDER BY path DESC LIMIT 1",
                arguments: StatementArguments(ancestors))
            if let deepest {
                let rowPath = CacheRow.path(deepest["path"])
                let rowNode = try Node(jsonText: deepest["value"])
                var location = rowPath
                for key in Path.relative(from: rowPath, to: path).components.dropLast() {
                    let here = rowNode.child(at: Path.relative(from: rowPath, to: location))
                    if here.isLeaf {
                        return try replaceRows(
                            at: location, with: here.updating(at: Path.relative(from: location, to: path), to: node),
                            splitBytes: splitBytes, in: db)
                    }
                    location = location.child(key)
                }
                let here = rowNode.child(at: Path.relative(from: rowPath, to: location))
                if here.isLeaf {
                    return try replaceRows(
                        at: location, with: here.updating(at: Path.relative(from: location, to: path), to: node),
                        splitBytes: splitBytes, in: db)
                }
            }
        }
        return try replaceRows(at: path, with: node, splitBytes: splitBytes, in: db)
    }

    /// Replaces every row at and below `path` with rows holding `node` (a `null` row for an empty
    /// node, or above a split one, when a row above could otherwise show older data there);
    /// returns the size change.
    private static func replaceRows(
        at path: Path, with node: Node, splitBytes: Int, in db: GRDB.Database
    ) throws -> ClientStoreSize {
        let (lower, upper) = CacheRow.subtree(path)
        let removed =
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(\(CacheRow.bytesSQL)), 0)
                    FROM server_cache WHERE path >= ? AND path < ?
                    """,
                arguments: [lower, upper]) ?? 0
        try db.execute(sql: "DELETE FROM server_cache WHERE path >= ? AND path < ?", arguments: [lower, upper])
        let ancestors = CacheRow.ancestors(path)
        let shadows = try !ancestors.isEmpty && Self.hasRow(in: ancestors, db)
        let added = try insertRows(at: path, node, shadowing: shadows, splitBytes: splitBytes, in: db)
        return ClientStoreSize(serverCache: added - removed, pendingWrites: 0)
    }

    /// Inserts the rows of `node` at `path` (where no row is); returns their bytes. `shadowing`: a
    /// row above holds older data here, which an empty or split node must hide.
    private static func insertRows(
        at path: Path, _ node: Node, shadowing: Bool, splitBytes: Int, in db: GRDB.Database
    ) throws -> Int {
        let key = CacheRow.key(path)
        func insert(_ value: String) throws -> Int {
            try db.execute(sql: "INSERT INTO server_cache (path, value) VALUES (?, ?)", arguments: [key, value])
            return CacheRow.bytes(key, value)
        }
        if node.isEmpty { return shadowing ? try insert("null") : 0 }
        let value = node.json(exportFormat: true).serialized()
        guard value.utf8.count > splitBytes, !node.isLeaf, node.priority == nil else { return try insert(value) }
        var added = shadowing ? try insert("null") : 0
        for child in node.children {
            added += try insertRows(
                at: path.child(child.key), child.value, shadowing: false, splitBytes: splitBytes, in: db)
        }
        return added
    }

    private static func hasRow(in keys: [String], _ db: GRDB.Database) throws -> Bool {
        let placeholders = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        return try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM server_cache WHERE path IN (\(placeholders)))",
            arguments: StatementArguments(keys)) ?? false
    }
}
