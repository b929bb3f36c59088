import Transport
import Tree

/// How a request sent to the server ended: its answer, or the connection closing first (the
/// request is then sent again, or given up, by whoever sent it).
enum RequestOutcome: Sendable {
    case answered(ResponseStatus, JSONValue)
    case disconnected

    /// The error an app sees for a refusal: ``DatabaseError/server(status:message:)`` with the
    /// status as the server spelled it; `nil` for `ok`.
    static func error(for status: ResponseStatus, data: JSONValue) -> DatabaseError? {
        status == .ok ? nil : .server(status: status.text, message: data.stringValue ?? status.text)
    }
}
