public import Tree

/// The identity an admin asks rules to be evaluated as, instead of bypassing them.
///
/// firebase-admin sends it as the REST query parameter `auth_variable_override` (JSON text) and in the
/// realtime `gauth` request as `authvar` (a JSON object) or `noauth: true` (unauthenticated):
/// ```swift
/// try AuthVariableOverride(parsing: #"{"uid":"my-service-worker"}"#).authVariable  // {"uid": "my-service-worker"}
/// try AuthVariableOverride(parsing: "null").isUnauthenticated                        // true
/// ```
public struct AuthVariableOverride: Sendable, Hashable {
    /// The rules' `auth` variable: the object exactly as given, or `null` for an unauthenticated request.
    public let authVariable: JSONValue

    /// Requests evaluated as an unauthenticated user (`auth == null`).
    public static let unauthenticated = AuthVariableOverride(validated: .null)

    /// Takes `value` as the auth variable; throws unless it is an object or `null`.
    public init(_ value: JSONValue) throws(TokenError) {
        switch value {
        case .object, .null: self.init(validated: value)
        default: throw .invalidAuthVariableOverride(reason: "expected a JSON object or null")
        }
    }

    /// Parses the JSON text of `auth_variable_override`; throws unless it is an object or `null`.
    public init(parsing text: String) throws(TokenError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw .invalidAuthVariableOverride(reason: error.description)
        }
        try self.init(value)
    }

    private init(validated value: JSONValue) {
        authVariable = value
    }

    /// Whether rules see `auth == null`.
    public var isUnauthenticated: Bool { authVariable.isNull }

    /// The `uid` member of the auth variable, when it is a string.
    public var uid: String? { authVariable["uid"]?.stringValue }
}
