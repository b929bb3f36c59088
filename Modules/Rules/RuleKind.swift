/// The three kinds of rule a location of a rules document can hold.
public enum RuleKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `.read`: grants reading the location and everything below it.
    case read
    /// `.write`: grants writing the location and everything below it.
    case write
    /// `.validate`: must hold for every non-null value written at the location.
    case validate

    /// The key the rule has in a document: `.read`, `.write` or `.validate`.
    public var key: String { "." + rawValue }

    public var description: String { key }
}
