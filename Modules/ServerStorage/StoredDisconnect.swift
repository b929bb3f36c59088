public import Tree

/// The onDisconnect operations of one live connection as a store keeps them (`operations` is
/// opaque here: the server encodes and decodes it), so that another process can run them if the
/// one holding the connection dies.
public struct StoredDisconnect: Sendable, Equatable {
    /// The connection's session id.
    public var session: String
    public var operations: JSONValue

    public init(session: String, operations: JSONValue) {
        self.session = session
        self.operations = operations
    }
}

/// A change to the stored onDisconnect operations, committed in the same transaction as the writes
/// it is submitted with (see ``ServerStore/commit(_:disconnects:)``).
public enum DisconnectChange: Sendable, Equatable {
    /// Stores (or replaces) a session's operations.
    case store(StoredDisconnect)
    /// Removes a session's operations: they ran, in the same transaction, or were all cancelled.
    case remove(session: String)
}
