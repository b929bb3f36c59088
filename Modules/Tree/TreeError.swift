/// What was wrong with a key, path or value handed to the `Tree` module, and where.
///
/// Every case names the offending input so that a server can answer with it verbatim:
/// ```swift
/// try ChildKey(validating: "a.b")  // throws invalidKey("a.b", reason: "contains '.'")
/// ```
public enum TreeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A key that cannot name a child.
    case invalidKey(String, reason: String)
    /// A path that cannot address a location.
    case invalidPath(String, reason: String)
    /// Data that cannot be stored at `path`.
    case invalidData(path: String, reason: String)
    /// Text that is not JSON.
    case invalidJSON(reason: String)
    /// A multi-path update that writes a location and one of its descendants (`a` and `a/b`).
    case overlappingUpdate(String, String)

    public var description: String {
        switch self {
        case .invalidKey(let key, let reason): "invalid key \"\(key)\": \(reason)"
        case .invalidPath(let path, let reason): "invalid path \"\(path)\": \(reason)"
        case .invalidData(let path, let reason): "invalid data at \"/\(path)\": \(reason)"
        case .invalidJSON(let reason): "invalid JSON: \(reason)"
        case .overlappingUpdate(let a, let b): "update writes both \"/\(a)\" and its descendant \"/\(b)\""
        }
    }
}

/// Limits that keys, paths and values must respect (see PROTOCOL.md).
public enum TreeLimits {
    /// Longest key, in UTF-8 bytes.
    public static let maxKeyBytes = 768
    /// Deepest path, in keys.
    public static let maxDepth = 32
    /// Longest string value, in UTF-8 bytes.
    public static let maxStringBytes = 10 * 1024 * 1024
}
