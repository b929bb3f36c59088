import Tree

/// The variables a rule sees while it is evaluated at one location.
struct EvaluationContext {
    var auth: RuleValue
    /// Milliseconds since 1970.
    var now: Double
    /// The current data at the root.
    var root: RuleSnapshot
    /// The data after the write, at the root (the current data for reads).
    var newRoot: Node
    var query: RuleQuery?
    /// The values of the wildcards above the location, outermost first.
    var captures: [String] = []
    /// The current data at the location.
    var data: RuleSnapshot
    /// The data at the location as it would be after the write (the current data for reads).
    var newData: RuleSnapshot

    init(auth: AuthContext?, now: Int64, root: Node, newRoot: Node? = nil, query: RuleQuery? = nil) {
        self.auth = auth.map { RuleValue($0.variable) } ?? .null
        self.now = Double(now)
        self.root = RuleSnapshot(keys: [], node: root)
        self.newRoot = newRoot ?? root
        self.query = query
        data = self.root
        newData = self.root
    }
}

/// Why evaluating a rule failed; the rule then counts as false.
struct RuleEvaluationError: Error {
    var reason: String
}
