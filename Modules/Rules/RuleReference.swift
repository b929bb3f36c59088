public import Tree

/// One rule of a document as it was applied: which rule (its location in the rules, such as
/// `/users/$uid`, and its kind), where in the data it was evaluated, and its expression.
public struct RuleReference: Sendable, Hashable, CustomStringConvertible {
    public var kind: RuleKind
    /// The rule's location in the document, wildcards included (`/users/$uid`).
    public var rulePath: String
    /// The data location the rule was evaluated at (`/users/ada`).
    public var path: Path
    /// The expression as written (`true` or `false` for boolean rules).
    public var expression: String
    /// Whether the expression reads the data (`data`, `newData` or `root`), so that a write can
    /// change its outcome: a server checks again the listens such a rule allowed after each write.
    public var readsData: Bool

    public init(kind: RuleKind, rulePath: String, path: Path, expression: String, readsData: Bool = false) {
        self.kind = kind
        self.rulePath = rulePath
        self.path = path
        self.expression = expression
        self.readsData = readsData
    }

    public var description: String {
        let rule = rulePath.hasSuffix("/") ? rulePath + kind.key : rulePath + "/" + kind.key
        return "\(rule) at \(path): \(expression)"
    }
}

/// A rule that did not pass: it evaluated to false, or its evaluation failed (which counts as
/// false), and then ``error`` says why.
public struct RuleFailure: Sendable, Hashable, CustomStringConvertible {
    public var rule: RuleReference
    /// Why evaluation failed (`"contains() needs a string, got null"`), or `nil` when the rule
    /// evaluated to false.
    public var error: String?

    public init(rule: RuleReference, error: String? = nil) {
        self.rule = rule
        self.error = error
    }

    public var description: String {
        if let error { return "\(rule) failed: \(error)" }
        return "\(rule) was false"
    }
}
