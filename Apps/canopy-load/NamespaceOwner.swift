import Logging
import NIOPosix
import PostgresNIO
import PostgresStore

/// Which node serves a namespace and under which epoch, read from the cluster's PostgreSQL
/// (`canopy_owner`), so that a fault run can check that epochs never go back.
struct NamespaceOwner: Equatable, Sendable {
    var node: String
    var epoch: Int64

    /// The owner row of `namespace` in the database at `url` (`nil`: no process took it yet).
    static func read(_ namespace: String, store url: String) async throws -> NamespaceOwner? {
        let location = try PostgresLocation(url)
        let logger = Logger(label: "canopy-load.owner")
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: location.connectionConfiguration, id: 1,
            logger: logger)
        do {
            let rows = try await connection.query(
                "SELECT node, epoch FROM canopy_owner WHERE ns = \(namespace)", logger: logger)
            var owner: NamespaceOwner?
            for try await (node, epoch) in rows.decode((String, Int64).self) {
                owner = NamespaceOwner(node: node, epoch: epoch)
            }
            try await connection.close()
            return owner
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
