/// What went wrong in a store (the server's `ServerStore` or the client's `ClientStore`), and where.
///
/// Every case names the database file (or the offending path) so that a log line alone says what
/// failed:
/// ```swift
/// do {
///     let store = try SQLiteServerStore(path: "/var/lib/canopy/main.sqlite")
/// } catch {
///     print(error)   // cannot open database "/var/lib/canopy/main.sqlite": SQLite error 14: unable to open…
/// }
/// ```
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database file could not be created, opened, configured or migrated.
    case cannotOpen(file: String, reason: String)
    /// Another store (in this process or another) has the database file open.
    case inUse(file: String)
    /// SQLite failed an operation on an open database (disk full, I/O error, closed database…);
    /// a failed commit changed nothing.
    case sqlite(file: String, operation: String, message: String)
    /// A write the store cannot hold: a key that is empty, contains `/`, or is `.priority` anywhere
    /// but last in a path. The commit holding it changed nothing.
    case invalidWrite(path: String, reason: String)
    /// A stored row or setting that does not decode: the file was damaged or written by something else.
    case corruptData(file: String, row: String, reason: String)
    /// The ``CommitQueue`` was finished before the write was submitted.
    case queueFinished
    /// An earlier submission of the ``CommitQueue`` failed and the queue was not resumed since, so
    /// this one, computed after it, was not stored either (the disk keeps a prefix of what was
    /// submitted).
    case haltedAfterFailure(reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let file, let reason):
            "cannot open database \"\(file)\": \(reason)"
        case .inUse(let file):
            "database \"\(file)\" is in use by another store (in another process or this one)"
        case .sqlite(let file, let operation, let message):
            "database \"\(file)\" failed \(operation): \(message)"
        case .invalidWrite(let path, let reason):
            "cannot store a write at \"/\(path)\": \(reason)"
        case .corruptData(let file, let row, let reason):
            "database \"\(file)\" holds an unreadable row \"\(row)\": \(reason)"
        case .queueFinished:
            "the commit queue is finished and accepts no more writes"
        case .haltedAfterFailure(let reason):
            "not stored because an earlier write failed: \(reason)"
        }
    }

    /// What a client may be told: the description without the server's file names or SQLite's
    /// messages, which stay in the server's log.
    public var clientMessage: String {
        switch self {
        case .cannotOpen, .inUse: "the database could not be opened"
        case .sqlite(_, let operation, _): "storage failed \(operation)"
        case .invalidWrite: description
        case .corruptData: "the database holds data that cannot be read"
        case .queueFinished: "the server is shutting down"
        case .haltedAfterFailure: "an earlier write could not be stored"
        }
    }
}
