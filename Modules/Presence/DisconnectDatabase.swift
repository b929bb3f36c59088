/// What ``ConnectionPresence`` needs of the database a connection's onDisconnect operations
/// belong to: to keep their record where it must outlive the process, and to run them.
///
/// The server's database conforms; the record is committed with the writes around it, so a change
/// is stored in the order it was made.
public protocol DisconnectDatabase<Identity>: Sendable {
    associatedtype Identity: DisconnectIdentity

    /// Whether records are stored before a change is acknowledged (a store several processes
    /// share, where another process runs them if this one dies). Otherwise the operations live in
    /// memory only and nothing is stored.
    var keepsDisconnectRecords: Bool { get }

    /// Stores the record of `session` as `current` gives it when the change is submitted, after
    /// every write applied before: none left (empty operations) removes it, `nil` (the operations
    /// already ran) stores nothing. Returns why the store refused, or `nil` once it is durable.
    func keep(session: String, current: @Sendable () -> DisconnectRecord<Identity>?) async -> (any Error)?

    /// Runs `record`'s operations as its identity, together, and removes the record kept for
    /// `session` with them; returns once they were handed over (not once durable).
    func run(_ record: DisconnectRecord<Identity>, session: String?) async
}
