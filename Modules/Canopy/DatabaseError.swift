public import Foundation

/// What went wrong in a database call, and where. Every case names the offending input or the
/// server's answer, so the message alone says what to fix.
///
/// ```swift
/// do {
///     try await Database.database().reference(withPath: "a.b").setValue(1)
/// } catch let error as DatabaseError {
///     print(error)   // invalid path "a.b": key "a.b" contains '.'
/// }
/// ```
public enum DatabaseError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// A path or key the database cannot address.
    case invalidPath(String, reason: String)
    /// A value that cannot be written at a path (a type the database cannot store, a non-finite
    /// number, a value over the limits).
    case invalidValue(String, reason: String)
    /// A query that cannot be built (two orderings, a limit set twice, …).
    case invalidQuery(String)
    /// The server refused a request: `status` is its code (`permission_denied`, `invalid_data`,
    /// `storage_error`, …), `message` its explanation.
    case server(status: String, message: String)
    /// `getData()` found no connection to the server (with ``DataSource/default``: and the device
    /// does not hold all the data at the location).
    case offline(String)
    /// `getData(source: .cache)`: the device does not hold all the data at the location.
    case notCached(String)
    /// A transaction's update block aborted it.
    case transactionAborted
    /// A transaction was retried 25 times against changing data and gave up.
    case transactionMaxRetries
    /// A transaction was cancelled because a `setValue` or update wrote over its location.
    case transactionOverriddenBySet
    /// The write was cancelled by `purgeOutstandingWrites()`.
    case writeCanceled
    /// A setting changed after the database was first used (such as `isPersistenceEnabled`).
    case tooLate(String)
    /// ``DatabaseReference/runTransaction(named:argument:andCompletionBlock:withLocalEvents:)`` named no
    /// block registered with ``Database/registerTransaction(named:_:)``.
    case transactionNotRegistered(String)
    /// A setting given a value it cannot take (such as a cache size outside 1 MB to 100 MB).
    case invalidSetting(String, reason: String)
    /// The server's TLS certificate was refused (see ``ServerTrust``): the message says whose and
    /// why. The SDK keeps retrying, but only a change of certificate or of trust will help.
    case certificateRefused(String)

    /// The Firebase error code this error corresponds to.
    public var code: String {
        switch self {
        case .invalidPath, .invalidValue, .invalidQuery, .invalidSetting: "invalid_argument"
        case .server(let status, _): status
        case .offline, .notCached, .certificateRefused: "unavailable"
        case .transactionAborted: "aborted"
        case .transactionNotRegistered: "invalid_argument"
        case .transactionMaxRetries: "maxretry"
        case .transactionOverriddenBySet: "overriddenbyset"
        case .writeCanceled: "write_canceled"
        case .tooLate: "failed_precondition"
        }
    }

    public var description: String {
        switch self {
        case .invalidPath(let path, let reason): "invalid path \"\(path)\": \(reason)"
        case .invalidValue(let path, let reason): "invalid value at \"\(path)\": \(reason)"
        case .invalidQuery(let reason): "invalid query: \(reason)"
        case .server(let status, let message): "the server refused the request (\(status)): \(message)"
        case .offline(let path): "no connection to the server to read \"\(path)\""
        case .notCached(let path): "the device does not hold all the data at \"\(path)\""
        case .transactionAborted: "the transaction was aborted by its update block"
        case .transactionNotRegistered(let name):
            "no transaction block is registered as \"\(name)\" (register it with registerTransaction(named:_:))"
        case .transactionMaxRetries: "the transaction had too many retries (the data kept changing)"
        case .transactionOverriddenBySet: "the transaction was overridden by a later set at its location"
        case .writeCanceled: "the write was canceled by purgeOutstandingWrites()"
        case .tooLate(let setting): "\(setting) must be set before the database is first used"
        case .invalidSetting(let setting, let reason): "invalid \(setting): \(reason)"
        case .certificateRefused(let message): "the server's certificate was refused: \(message)"
        }
    }

    public var errorDescription: String? { description }
}
