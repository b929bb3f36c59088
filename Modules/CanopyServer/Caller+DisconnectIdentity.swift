import Presence
import Rules
import Tree

/// How a stored onDisconnect record names the caller its operations run as: `"admin": true`, the
/// `"auth"` variable, or nothing for an unauthenticated connection.
extension Caller: DisconnectIdentity {
    var recordMembers: [String: JSONValue] {
        switch self {
        case .admin: ["admin": true]
        case .user(let auth?): ["auth": auth.variable.json()]
        case .user(nil): [:]
        }
    }

    init(recordMembers members: [String: JSONValue]) {
        self = members["admin"]?.boolValue == true ? .admin : .user(members["auth"].map(AuthContext.init(json:)))
    }
}
