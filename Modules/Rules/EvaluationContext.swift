import Tree

/// The variables a rule sees while it is evaluated at one location.
struct EvaluationContext {
    var auth: RuleValue
    /// Milliseconds since 1970.
    var now: Double
    /// The current data at the root.
    var root: RuleSnapshot
    /// The data after the write (the current data for reads), built where a rule looks at it.
    let newTree: NewDataTree
    /// The data after the write, at the root.
    var newRoot: Node { newTree.root }
    var query: RuleQuery?
    /// The values of the wildcards above the location, outermost first.
    var captures: [String] = []
    /// The current data at the location.
    var data: RuleSnapshot
    /// The data at the location as it would be after the write (the current data for reads).
    var newData: RuleSnapshot

    /// A context for a read (`parts` empty) or for the write of `parts` (locations and values).
    init(auth: AuthContext?, now: Int64, root: Node, writing parts: [(Path, Node)] = [], query: RuleQuery? = nil) {
        self.auth = auth.map { RuleValue($0.variable) } ?? .null
        self.now = Double(now)
        self.root = RuleSnapshot(keys: [], node: root)
        self.newTree = NewDataTree(current: root, parts: parts)
        captures.reserveCapacity(4)
        self.query = query
        data = self.root
        newData = self.root
    }
}

/// Why evaluating a rule failed; the rule then counts as false.
struct RuleEvaluationError: Error {
    var reason: String
}
