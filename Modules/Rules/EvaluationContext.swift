import Tree

/// What every rule of one check sees alike: who asks, when, the data, and the query of a read.
/// Shared by reference, so that moving from rule to rule copies nothing of it.
final class RuleCheck {
    let auth: RuleValue
    /// Milliseconds since 1970.
    let now: Double
    /// The current data at the root.
    let root: Node
    let query: RuleQuery?
    /// The data after the write (the current data for reads), built where a rule looks at it.
    var newTree: NewDataTree

    /// A check of a read (`parts` empty) or of the write of `parts`.
    init(auth: AuthContext?, now: Int64, root: Node, writing parts: WriteParts, query: RuleQuery?) {
        self.auth = auth.map { RuleValue($0.variable) } ?? .null
        self.now = Double(now)
        self.root = root
        self.query = query
        newTree = NewDataTree(current: root, parts: parts)
    }
}

/// The variables a rule sees while it is evaluated at one location. Only what the rule reads is
/// set (see ``CompiledRule``); the rest holds whatever an earlier rule left.
struct EvaluationContext {
    let check: RuleCheck
    /// The location the rule is evaluated at, from the root; a wildcard variable is the key at its
    /// depth.
    var location: ArraySlice<ChildKey> = []
    /// The current data at the location.
    var data: Node = .empty
    /// The data at the location as it would be after the write (the current data for reads).
    var newData: Node = .empty

    /// A context for a read (`parts` empty) or for the write of `parts`.
    init(auth: AuthContext?, now: Int64, root: Node, writing parts: WriteParts = .none, query: RuleQuery? = nil) {
        check = RuleCheck(auth: auth, now: now, root: root, writing: parts, query: query)
    }

    /// Makes `location` the location of `rule`, setting what the rule reads; its current and new
    /// data are `data` and `newData`, or looked up when `nil`.
    mutating func enter(
        _ location: ArraySlice<ChildKey>, data: Node? = nil, newData: Node? = nil, for rule: CompiledRule
    ) {
        if rule.readsLocation { self.location = location }
        if rule.readsData { self.data = data ?? location.reduce(check.root) { $0.child($1) } }
        if rule.readsNewData { self.newData = newData ?? check.newTree.node(at: location) }
    }

    /// Drops what ``enter(_:data:for:)`` set, so that nothing here keeps `location`'s storage.
    mutating func leave(_ rule: CompiledRule) {
        if rule.readsLocation { location = [] }
        if rule.readsData { data = .empty }
        if rule.readsNewData { newData = .empty }
    }
}

/// Why evaluating a rule failed; the rule then counts as false.
struct RuleEvaluationError: Error {
    var reason: String
}
