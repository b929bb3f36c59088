/// What went wrong in a store (the server's `ServerStore` or the client's `ClientStore`), and where.
///
/// Every case names the database file, the namespace (in the PostgreSQL store) or the offending
/// path, so that a log line alone says what failed:
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
    /// In the PostgreSQL store `file` is the store's address (without its password) and `row` names
    /// the table, the namespace and the key (`canopy_settings/main/rules`).
    case corruptData(file: String, row: String, reason: String)
    /// This process no longer serves `namespace` (cluster mode): another process took it over under
    /// an epoch higher than `epoch`, or the lease could not be renewed in time and the store stepped
    /// down. Nothing was written; the namespace's clients belong to its new owner.
    case fenced(namespace: String, epoch: Int64)
    /// A PostgreSQL statement of `operation` on `namespace` failed (refused, or its connection lost);
    /// the transaction holding it changed nothing.
    case postgres(namespace: String, operation: String, message: String)
    /// The store did not answer `operation` on `namespace` within `after` (PostgreSQL unreachable,
    /// every pooled connection busy). A write may still have committed.
    case timedOut(namespace: String, operation: String, after: Duration)
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
        case .fenced(let namespace, let epoch):
            "this server no longer serves namespace \"\(namespace)\" (it held epoch \(epoch)): another took it "
                + "over, or its lease could not be renewed"
        case .postgres(let namespace, let operation, let message):
            "PostgreSQL failed \(operation) of namespace \"\(namespace)\": \(message)"
        case .timedOut(let namespace, let operation, let after):
            "PostgreSQL did not answer within \(after) (\(operation) of namespace \"\(namespace)\")"
        case .queueFinished:
            "the commit queue is finished and accepts no more writes"
        case .haltedAfterFailure(let reason):
            "not stored because an earlier write failed: \(reason)"
        }
    }

    /// What a client may be told: the description without the server's file names or SQLite's and
    /// PostgreSQL's messages, which stay in the server's log.
    public var clientMessage: String {
        switch self {
        case .cannotOpen, .inUse: "the database could not be opened"
        case .sqlite(_, let operation, _): "storage failed \(operation)"
        case .invalidWrite: description
        case .corruptData: "the database holds data that cannot be read"
        case .fenced(let namespace, _): "namespace \"\(namespace)\" moved to another server"
        case .postgres(_, let operation, _): "storage failed \(operation)"
        case .timedOut(_, let operation, _): "storage did not answer in time (\(operation))"
        case .queueFinished: "the server is shutting down"
        case .haltedAfterFailure: "an earlier write could not be stored"
        }
    }
}
