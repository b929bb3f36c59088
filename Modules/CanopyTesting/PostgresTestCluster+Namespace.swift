public import Tree

/// What the cluster's PostgreSQL holds of a namespace, read with `psql` (names and paths are the
/// test's own, put in the SQL as they are).
extension PostgresTestCluster {
    /// The node that owns `namespace` in `canopy_owner` (`""` when none does).
    public func owner(of namespace: String) async throws -> String {
        try await psql("SELECT node FROM canopy_owner WHERE ns = '\(namespace)'")
    }

    /// The epoch `namespace` is owned under, `nil` when it has no owner row.
    public func epoch(of namespace: String) async throws -> Int? {
        Int(try await psql("SELECT epoch FROM canopy_owner WHERE ns = '\(namespace)'"))
    }

    /// The namespace as its rows hold it, as a JSON tree (without priorities' meaning: a
    /// `.priority` row is a member like any other).
    public func storedTree(of namespace: String) async throws -> JSONValue {
        let rows = try await psql(
            "SELECT path || E'\\t' || value FROM canopy_nodes WHERE ns = '\(namespace)' ORDER BY path")
        var tree = JSONValue.null
        for row in rows.split(separator: "\n") {
            guard let tab = row.firstIndex(of: "\t") else { continue }
            let path = String(row[..<tab])
            tree = tree.setting(try JSONValue(parsing: String(row[row.index(after: tab)...])), at: path)
        }
        return tree
    }

    /// The number stored at `path` in `namespace` (0 when nothing is).
    public func storedNumber(at path: String, in namespace: String) async throws -> Int {
        let text = try await psql("SELECT value FROM canopy_nodes WHERE ns = '\(namespace)' AND path = '\(path)'")
        if text.isEmpty { return 0 }
        guard let value = Double(text) else { throw ClusterTestError.unexpected("not a number: \(text)") }
        return Int(value)
    }
}
