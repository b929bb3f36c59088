public import Transport
public import Tree

/// How a write ended.
public enum WriteOutcome: Sendable, Equatable {
    /// Applied and durable; `value` is the data now at the written location.
    case ok(value: Node)
    /// A compare-and-set found other data; `current` is what is there.
    case datastale(current: Node)
    /// Refused before anything changed.
    case rejected(WriteError)
}

/// Why a write or read was refused: the realtime-protocol status and a message for people.
public struct WriteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The protocol status (`invalid_path`, `invalid_data`, `datastale`, `storage_error`, ...).
    public var status: ResponseStatus
    public var message: String
    /// Whether the write was not stored because another server process serves its namespace now
    /// (``moved(_:)``).
    public private(set) var isMoved = false

    public init(status: ResponseStatus, message: String) {
        self.status = status
        self.message = message
    }

    public static func invalidPath(_ error: TreeError) -> WriteError {
        WriteError(status: .invalidPath, message: error.description)
    }

    /// What the rules refused: status `permission_denied`, and nothing said of which rule.
    public static let permissionDenied = WriteError(status: .permissionDenied, message: "Permission denied")

    public static func invalidData(_ message: String) -> WriteError {
        WriteError(status: .invalidData, message: message)
    }

    /// The refusal for a value or location that failed validation: `invalid_path` for a location,
    /// `invalid_data` for anything else.
    public static func refused(_ error: TreeError) -> WriteError {
        if case .invalidPath = error { return .invalidPath(error) }
        return .invalidData(error.description)
    }

    /// A write not stored because another server process serves `namespace` now (cluster mode):
    /// status `unavailable`; sent again, to the new owner, it is stored there.
    public static func moved(_ namespace: String) -> WriteError {
        var error = WriteError(
            status: .unavailable, message: "namespace \"\(namespace)\" moved to another server; reconnect")
        error.isMoved = true
        return error
    }

    public var description: String { "\(status): \(message)" }
}
