/// Why a rules document was refused, and where: every case carries the 1-based line and column in
/// the document text (columns count Unicode scalars) and a reason fit to show to whoever sent it.
///
/// ```swift
/// try RulesDocument(parsing: #"{"rules": {".read": "skies === 'blue'"}}"#)
/// // throws invalidExpression(line: 1, column: 22, reason: "/.read: unknown variable 'skies'")
/// ```
public enum RulesError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Text that is not JSON (`//` and `/* */` comments allowed).
    case invalidJSON(line: Int, column: Int, reason: String)
    /// JSON that is not a rules document: no `"rules"` object, an unknown `.key`, a rule that is not
    /// a string or a boolean, two wildcard children of one location, a bad `.indexOn`.
    case invalidDocument(line: Int, column: Int, reason: String)
    /// A rule expression that does not parse or cannot be valid: an unknown variable or method, a
    /// wrong argument, operands of the wrong type, a rule that is not a boolean.
    case invalidExpression(line: Int, column: Int, reason: String)

    /// The line of the document where the problem is (1-based).
    public var line: Int {
        switch self {
        case .invalidJSON(let line, _, _), .invalidDocument(let line, _, _), .invalidExpression(let line, _, _): line
        }
    }

    /// The column of the document where the problem is (1-based, in Unicode scalars).
    public var column: Int {
        switch self {
        case .invalidJSON(_, let column, _), .invalidDocument(_, let column, _),
            .invalidExpression(_, let column, _):
            column
        }
    }

    /// What is wrong, without the position.
    public var reason: String {
        switch self {
        case .invalidJSON(_, _, let reason), .invalidDocument(_, _, let reason),
            .invalidExpression(_, _, let reason):
            reason
        }
    }

    public var description: String {
        switch self {
        case .invalidJSON: "invalid JSON at line \(line), column \(column): \(reason)"
        case .invalidDocument: "invalid rules at line \(line), column \(column): \(reason)"
        case .invalidExpression: "invalid rule expression at line \(line), column \(column): \(reason)"
        }
    }
}
