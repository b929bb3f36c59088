/// Placeholders a client writes for the server to fill in: `{".sv": "timestamp"}` becomes the
/// server's clock in milliseconds, `{".sv": {"increment": n}}` adds `n` to the current number
/// (a missing or non-number current value counts as 0).
public enum ServerValue: Sendable, Hashable {
    case timestamp
    case increment(Double)

    /// The placeholder `json` spells (the value of its `.sv` member).
    public init(json: JSONValue, path: Path) throws(TreeError) {
        switch json {
        case .string("timestamp"):
            self = .timestamp
        case .object(let members) where members.count == 1:
            guard case .number(let delta)? = members["increment"], delta.isFinite else { fallthrough }
            self = .increment(delta)
        default:
            throw .invalidData(path: path.wireString, reason: "unknown server value \(json.serialized())")
        }
    }

    /// The value this placeholder takes over `existing` at time `now` (ms since 1970).
    public func resolved(existing: Node, now: Double) -> LeafValue {
        switch self {
        case .timestamp:
            return .number(now)
        case .increment(let delta):
            if case .number(let current)? = existing.leafValue { return .number(current + delta) }
            return .number(delta)
        }
    }

    /// The JSON spelling of this placeholder.
    public var json: JSONValue {
        switch self {
        case .timestamp: ["\(ServerValue.key)": "timestamp"]
        case .increment(let delta): [ServerValue.key: ["increment": .number(delta)]]
        }
    }

    /// The member name that marks a placeholder.
    public static let key = ".sv"
}

extension JSONValue {
    /// Whether a server-value placeholder (an object with a `.sv` member) occurs anywhere in this
    /// value; only then does building its node need the data it replaces.
    public var containsServerValue: Bool {
        switch self {
        case .null, .bool, .number, .string: false
        case .array(let elements): elements.contains { $0.containsServerValue }
        case .object(let members): members[ServerValue.key] != nil || members.values.contains { $0.containsServerValue }
        }
    }
}

/// How to resolve server values while building nodes: the clock reading every `timestamp` in one
/// write shares.
public struct ServerValueContext: Sendable {
    /// Milliseconds since 1970 on the server's clock (or the client's estimate of it).
    public var now: Double

    public init(now: Double) { self.now = now }
}
