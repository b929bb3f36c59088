public import Tree

extension RulesDocument {
    /// Whether `auth` may read `path` (with `query`, for a query read) when the data is `root`.
    ///
    /// Allowed when a `.read` rule at `path` or above holds; `.read` rules below `path` do not
    /// count. Costs the evaluation of the `.read` rules on the way, each walking only the data its
    /// expression reads.
    ///
    /// - Parameters:
    ///   - path: The location read.
    ///   - auth: Who reads (`nil`: unauthenticated, `auth` is `null`).
    ///   - root: The current data, from the root.
    ///   - query: The query of the read (`nil`: a plain read).
    ///   - now: The server's clock in milliseconds since 1970 (the `now` variable).
    public func canRead(
        _ path: Path, auth: AuthContext?, root: Node, query: RuleQuery? = nil, now: Int64
    ) -> RuleDecision {
        var context = EvaluationContext(auth: auth, now: now, root: root, query: query)
        switch grant(.read, at: path, context: &context) {
        case .granted(let rule): return .allowed(rule)
        case .notGranted(let tried): return .denied(.notGranted(.read, path: path, tried: tried))
        }
    }
}
