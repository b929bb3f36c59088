/// What went wrong in a ``ServerStore``, and where.
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

    public var description: String {
        switch self {
        case .cannotOpen(let file, let reason):
            "cannot open database \"\(file)\": \(reason)"
        case .sqlite(let file, let operation, let message):
            "database \"\(file)\" failed \(operation): \(message)"
        case .invalidWrite(let path, let reason):
            "cannot store a write at \"/\(path)\": \(reason)"
        case .corruptData(let file, let row, let reason):
            "database \"\(file)\" holds an unreadable row \"\(row)\": \(reason)"
        case .queueFinished:
            "the commit queue is finished and accepts no more writes"
        }
    }
}
