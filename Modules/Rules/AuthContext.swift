public import Tree

/// Who makes a request, as rules see it: the value of the `auth` variable.
///
/// An unauthenticated request has no context (pass `nil`), and `auth` is `null` in its rules. An
/// authenticated one has an object whose members rules read as `auth.uid`, `auth.provider`,
/// `auth.token.email`, …; any member may be present, so a server can also hand over an object of
/// its own making.
///
/// ```swift
/// // From the verified claims of a Firebase ID token:
/// let auth = AuthContext(idTokenClaims: claims)   // auth.uid == claims.sub, auth.token == claims
/// // Or by hand:
/// let admin = AuthContext(uid: "ada", provider: "custom", token: Node(children: [("admin", Node(.bool(true)))]))
/// ```
public struct AuthContext: Sendable, Equatable {
    /// The `auth` variable: an object with children (a leaf or empty node reads as such in rules).
    public var variable: Node

    /// A context whose `auth` variable is `variable`.
    public init(variable: Node) {
        self.variable = variable
    }

    /// A context whose `auth` is `json` (normally an object), every member kept.
    public init(json: JSONValue) {
        variable = Self.node(from: json)
    }

    /// A context whose `auth` is `{uid, provider, token}`, the shape Firebase gives it.
    public init(uid: String, provider: String, token: Node = .empty) {
        variable = Node(children: [
            (ChildKey("uid"), Node(.string(uid))),
            (ChildKey("provider"), Node(.string(provider))),
            (ChildKey("token"), token),
        ])
    }

    /// The context Firebase builds from the (already verified) claims of an ID token: `auth.uid`
    /// is the `sub` claim (or `user_id`), `auth.provider` the `firebase.sign_in_provider` claim
    /// without a `.com` suffix (`"google.com"` reads `"google"`; `"custom"` when absent), and
    /// `auth.token` holds every claim. `nil` when the claims name no user.
    public init?(idTokenClaims claims: JSONValue) {
        guard let uid = claims["sub"]?.stringValue ?? claims["user_id"]?.stringValue, !uid.isEmpty else {
            return nil
        }
        var provider = claims["firebase"]?["sign_in_provider"]?.stringValue ?? "custom"
        if provider.hasSuffix(".com") { provider.removeLast(4) }
        self.init(uid: uid, provider: provider, token: Self.node(from: claims))
    }

    /// `json` as a node, keeping every member: claims are read, never stored, so keys that data
    /// could not hold (such as `"google.com"` in `firebase.identities`) stay readable.
    static func node(from json: JSONValue) -> Node {
        switch json {
        case .null: .empty
        case .bool(let value): Node(.bool(value))
        case .number(let value): Node(.number(value))
        case .string(let value): Node(.string(value))
        case .array(let elements):
            Node(children: elements.enumerated().map { (ChildKey(String($0.offset)), node(from: $0.element)) })
        case .object(let members):
            Node(children: members.map { (ChildKey($0.key), node(from: $0.value)) })
        }
    }
}
