public import Tree

extension RulesDocument {
    /// Whether `auth` may replace the data at `path` by `value` (a set; an empty `value` deletes)
    /// when the data is `root`.
    ///
    /// Allowed when a `.write` rule at `path` or above holds and every applicable `.validate` rule
    /// holds (see ``RulesDocument``). `value` must have its server values resolved already, with
    /// the same `now`.
    public func canSet(_ path: Path, to value: Node, auth: AuthContext?, root: Node, now: Int64) -> RuleDecision {
        var context = EvaluationContext(auth: auth, now: now, root: root, writing: WriteParts(path, value))
        let grant: RuleReference
        switch self.grant(.write, at: path, context: &context) {
        case .granted(let rule): grant = rule
        case .notGranted(let tried): return .denied(.notGranted(.write, path: path, tried: tried))
        }
        guard self.root.hasValidation else { return .allowed(grant) }
        var validation = WriteValidation(context: consume context)
        if let failure = validation.validate(self.root, set: path, to: value) { return .denied(.invalidData(failure)) }
        return .allowed(grant)
    }

    /// Whether `auth` may apply a multi-path update at `path`: each of `children` replaces the
    /// data at `path` + its relative path. Allowed only if every part is, with `newData` the
    /// data after all of them; an update without children writes nothing and is allowed.
    public func canUpdate(
        _ path: Path, children: [(Path, Node)], auth: AuthContext?, root: Node, now: Int64
    ) -> RuleDecision {
        guard !children.isEmpty else { return .allowed(nil) }
        let parts = WriteParts(children.map { (path.child($0.0), $0.1) })
        return canUpdate(parts, auth: auth, root: root, now: now)
    }

    private func canUpdate(_ parts: WriteParts, auth: AuthContext?, root: Node, now: Int64) -> RuleDecision {
        var context = EvaluationContext(auth: auth, now: now, root: root, writing: parts)
        var firstGrant: RuleReference?
        for (path, _) in parts {
            switch grant(.write, at: path, context: &context) {
            case .granted(let rule): firstGrant = firstGrant ?? rule
            case .notGranted(let tried): return .denied(.notGranted(.write, path: path, tried: tried))
            }
        }
        if self.root.hasValidation {
            var validation = WriteValidation(context: consume context)
            let written = parts.map(\.path).sorted()
            if let failure = validation.validate(self.root, data: nil, newData: nil, writes: written[...]) {
                return .denied(.invalidData(failure))
            }
        }
        return .allowed(firstGrant)
    }
}
