/// What a rule expression can evaluate to, as far as can be known before evaluating it: a set of
/// kinds. `auth.x` can be anything, `data.val()` any primitive; a literal is exactly one kind.
///
/// An operand is refused when none of the kinds it can have is one the operator accepts; when
/// some are, the operator checks the actual value at evaluation (and a mismatch fails the rule).
struct StaticType: OptionSet, Hashable {
    let rawValue: UInt16

    static let null = StaticType(rawValue: 1 << 0)
    static let boolean = StaticType(rawValue: 1 << 1)
    static let number = StaticType(rawValue: 1 << 2)
    static let string = StaticType(rawValue: 1 << 3)
    /// An object with members: `auth` and its members, `val()` of a node with children.
    static let object = StaticType(rawValue: 1 << 4)
    static let snapshot = StaticType(rawValue: 1 << 5)
    static let query = StaticType(rawValue: 1 << 6)
    static let regex = StaticType(rawValue: 1 << 7)

    /// A value a node can hold: `val()` and `getPriority()`.
    static let primitive: StaticType = [.null, .boolean, .number, .string]
    /// Anything JSON: `auth` and its members.
    static let json: StaticType = [.null, .boolean, .number, .string, .object]

    /// Whether more than one kind is possible.
    var isUncertain: Bool { rawValue & (rawValue - 1) != 0 }

    /// The type in words, for messages: `a number`, `a string or null`, `any value`.
    var described: String {
        if self == .json { return "any value" }
        if self == .primitive { return "a primitive value" }
        let names: [(StaticType, String)] = [
            (.null, "null"), (.boolean, "a boolean"), (.number, "a number"), (.string, "a string"),
            (.object, "an object"), (.snapshot, "a RuleDataSnapshot"), (.query, "the query"),
            (.regex, "a regular expression"),
        ]
        return names.filter { contains($0.0) }.map(\.1).joined(separator: " or ")
    }
}
