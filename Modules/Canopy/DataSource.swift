/// Where ``DatabaseQuery/getData(source:)`` reads from.
///
/// ```swift
/// let cached = try await ref.getData(source: .cache)     // the device only, never the network
/// let fresh = try await ref.getData(source: .server)     // the server only, never the device's copy
/// ```
public enum DataSource: Sendable, Hashable {
    /// The server when connected; when offline, the data the device holds for the query, if it
    /// holds all of it.
    case `default`
    /// The server only: ``DatabaseError/offline(_:)`` when there is no connection, never the
    /// device's data.
    case server
    /// The device only (memory and, with persistence, the disk), with pending writes applied:
    /// nothing is sent; ``DatabaseError/notCached(_:)`` unless it holds all the query's data.
    case cache
}
