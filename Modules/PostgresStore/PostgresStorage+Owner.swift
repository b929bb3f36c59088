public import Logging
import PostgresNIO

extension PostgresStorage {
    /// The process that took namespace `name` last, whether or not its lease still runs (`nil`: no
    /// process took it yet). Reads on a connection of its own, without a storage or a pool, so a
    /// process that serves nothing (a tool watching a cluster) can ask.
    public static func owner(
        of name: String, at location: PostgresLocation, logger: Logger
    ) async throws(PostgresStoreError) -> NamespaceOwner? {
        let operation = "reading the owner of namespace \"\(name)\""
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: location.connectionConfiguration, id: 0, logger: logger)
        } catch {
            throw connectionFailure(error, location: location)
        }
        do {
            let owner = try await untilClosed(connection, operation) {
                try await Self.owner(of: name, on: connection, logger: logger)
            }
            try? await connection.close()
            return owner
        } catch {
            try? await connection.close()
            throw failure(operation, error)
        }
    }

    /// The owner row of namespace `name`, read on `connection`.
    static func owner(
        of name: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> NamespaceOwner? {
        let rows = try await connection.query(
            "SELECT node, host, epoch FROM canopy_owner WHERE ns = \(name)", logger: logger)
        for try await (node, host, epoch) in rows.decode((String, String?, Int64).self) {
            return NamespaceOwner(node: node, host: host, epoch: epoch)
        }
        return nil
    }
}

extension PostgresStorage {
    /// Every namespace of the cluster (each that has an owner row: it was ever taken), by name.
    public func owners() async throws(PostgresStoreError) -> [String: NamespaceOwner] {
        let operation = "listing the namespaces"
        do {
            return try await withConnection(operation) { [logger] connection in
                let rows = try await connection.query("SELECT ns, node, host, epoch FROM canopy_owner", logger: logger)
                var owners: [String: NamespaceOwner] = [:]
                for try await (name, node, host, epoch) in rows.decode((String, String, String?, Int64).self) {
                    owners[name] = NamespaceOwner(node: node, host: host, epoch: epoch)
                }
                return owners
            }
        } catch {
            throw Self.failure(operation, error)
        }
    }

    /// The process that took namespace `name` last (`nil`: none yet), read on a connection of the pool.
    public func owner(of name: String) async throws(PostgresStoreError) -> NamespaceOwner? {
        let operation = "reading the owner of namespace \"\(name)\""
        do {
            return try await withConnection(operation) { [logger] connection in
                try await Self.owner(of: name, on: connection, logger: logger)
            }
        } catch {
            throw Self.failure(operation, error)
        }
    }
}
