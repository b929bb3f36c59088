public import Tree

/// Who a connection's onDisconnect operations run as, and how their stored record names it.
///
/// The server's caller conforms: the admin is `"admin": true`, a user the `"auth"` variable, an
/// unauthenticated connection nothing.
public protocol DisconnectIdentity: Sendable, Equatable {
    /// The members that name the identity in a stored record, beside `"operations"`.
    var recordMembers: [String: JSONValue] { get }

    /// The identity a stored record's members name (`"operations"` among them).
    init(recordMembers: [String: JSONValue])
}
