/// The status of the server's answer to a request (`s` in the response): `ok`, or why the request
/// was refused. Server and clients share it, so neither compares spellings.
///
/// ```swift
/// if case .response(_, .permissionDenied, _) = message { … }
/// ```
public enum ResponseStatus: Sendable, Hashable, CustomStringConvertible {
    case ok
    /// `permission_denied`: the rules refused the request.
    case permissionDenied
    /// `invalid_path`: a location that cannot be written or read.
    case invalidPath
    /// `invalid_data`: a value that cannot be stored.
    case invalidData
    /// `invalid_query`: query parameters that do not form a query.
    case invalidQuery
    /// `invalid_request`: a request that is not one the protocol has.
    case invalidRequest
    /// `invalid_token`: a credential that does not verify.
    case invalidToken
    /// `expired_token`: a credential past its expiry.
    case expiredToken
    /// `datastale`: a compare-and-set whose expected hash no longer matches.
    case dataStale
    /// `storage_error`: the server could not store the write.
    case storageError
    /// `unavailable`: the server cannot take the request now (behind on storage, or the namespace
    /// moved to another process).
    case unavailable
    /// `too_big`: over a size limit.
    case tooBig
    /// `too_many_listens`: the connection holds as many listens as it may.
    case tooManyListens
    /// `unknown_action`: an action the server does not know.
    case unknownAction
    /// Any other status, as spelled on the wire.
    case other(String)

    private static let spellings: [(ResponseStatus, String)] = [
        (.ok, "ok"), (.permissionDenied, "permission_denied"), (.invalidPath, "invalid_path"),
        (.invalidData, "invalid_data"), (.invalidQuery, "invalid_query"), (.invalidRequest, "invalid_request"),
        (.invalidToken, "invalid_token"), (.expiredToken, "expired_token"), (.dataStale, "datastale"),
        (.storageError, "storage_error"), (.unavailable, "unavailable"), (.tooBig, "too_big"),
        (.tooManyListens, "too_many_listens"), (.unknownAction, "unknown_action"),
    ]

    /// The status spelled `text` on the wire.
    public init(_ text: String) {
        self = Self.spellings.first { $0.1 == text }?.0 ?? .other(text)
    }

    /// Its spelling on the wire.
    public var text: String {
        if case .other(let text) = self { return text }
        return Self.spellings.first { $0.0 == self }?.1 ?? ""
    }

    public var description: String { text }
}
