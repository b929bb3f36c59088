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

    /// The value this placeholder takes over `existing` at time `now` (ms since 1970), written at
    /// `path`.
    ///
    /// Sums follow IEEE 754 double arithmetic, as Firebase documents for `increment`. A sum that
    /// overflows to infinity cannot be stored (JSON has no infinity), so it is refused with
    /// ``TreeError/invalidData(path:reason:)`` rather than saturated or stored as `null`:
    ///
    /// ```swift
    /// try ServerValue.increment(1.7e308).resolved(existing: Node(.number(1.7e308)), now: 0, at: "n/x")
    /// // throws invalidData(path: "n/x", reason: "increment of 1.7e+308 by 1.7e+308 is not a finite number")
    /// ```
    public func resolved(existing: Node, now: Double, at path: Path = .root) throws(TreeError) -> LeafValue {
        switch self {
        case .timestamp:
            return .number(now)
        case .increment(let delta):
            guard case .number(let current)? = existing.leafValue else { return .number(delta) }
            let sum = current + delta
            guard sum.isFinite else {
                throw .invalidData(
                    path: path.wireString,
                    reason: "increment of \(JSONValue.format(number: current)) by \(JSONValue.format(number: delta)) "
                        + "is not a finite number")
            }
            return .number(sum)
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
