/// Why a change to a connection's onDisconnect operations was not made; they are as they were.
public enum DisconnectRefusal: Error {
    /// The operations would hold more than `limit` bytes.
    case tooBig(limit: Int)
    /// The database keeps records and could not store the change (its error).
    case notStored(any Error)
}
