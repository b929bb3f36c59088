public import Tree

/// Whether the rules allow an operation, and why: the rule that granted it, or what refused it.
///
/// ```swift
/// switch rules.canRead("/users/ada", auth: nil, root: data, now: now) {
/// case .allowed(let grant): log.debug("read granted by \(grant?.description ?? "nothing")")
/// case .denied(let denial): log.info("read denied: \(denial)")
/// }
/// ```
public enum RuleDecision: Sendable, Hashable, CustomStringConvertible {
    /// Allowed by the `.read` or `.write` rule given (for an update, the one that granted its first
    /// part), every applicable `.validate` having passed. `nil` when nothing needed a grant: an
    /// update without children writes nothing.
    case allowed(RuleReference?)
    /// Refused, and why.
    case denied(RuleDenial)

    public var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }

    /// Why the operation was refused, `nil` when it was allowed.
    public var denial: RuleDenial? {
        if case .denied(let denial) = self { return denial }
        return nil
    }

    public var description: String {
        switch self {
        case .allowed(let rule?): "allowed by \(rule)"
        case .allowed(nil): "allowed (nothing to write)"
        case .denied(let denial): "denied: \(denial)"
        }
    }
}

/// Why the rules refused an operation.
public enum RuleDenial: Sendable, Hashable, CustomStringConvertible {
    /// No `.read` (or `.write`) rule at `path` or above it evaluated to true. `tried` lists, from
    /// the root down, every such rule that was evaluated and how it failed; it is empty when the
    /// document has no rule of that kind on the way.
    case notGranted(RuleKind, path: Path, tried: [RuleFailure])
    /// A `.validate` rule refused the data that would be written.
    case invalidData(RuleFailure)

    public var description: String {
        switch self {
        case .notGranted(let kind, let path, let tried) where tried.isEmpty:
            "no \(kind.key) rule at or above \(path)"
        case .notGranted(let kind, let path, let tried):
            "no \(kind.key) rule at or above \(path) granted access ("
                + tried.map(\.description).joined(separator: "; ") + ")"
        case .invalidData(let failure):
            "validation failed: \(failure)"
        }
    }
}
