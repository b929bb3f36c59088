import Tree

/// One location of a compiled rules document: its rules, its `.indexOn`, and the locations below
/// it, named or wildcard. Immutable once built.
final class RuleLocation: Sendable {
    let read: CompiledRule?
    let write: CompiledRule?
    let validate: CompiledRule?
    let indexOn: [String]
    let children: [ChildKey: RuleLocation]
    /// The `$name` child, which applies to every key not named in ``children``.
    let wildcard: RuleLocation?
    /// Whether this location or one below it has a `.validate` rule; writes skip subtrees without.
    let hasValidation: Bool

    init(
        read: CompiledRule? = nil, write: CompiledRule? = nil, validate: CompiledRule? = nil, indexOn: [String] = [],
        children: [ChildKey: RuleLocation] = [:], wildcard: RuleLocation? = nil
    ) {
        self.read = read
        self.write = write
        self.validate = validate
        self.indexOn = indexOn
        self.children = children
        self.wildcard = wildcard
        hasValidation =
            validate != nil || wildcard?.hasValidation == true || children.values.contains { $0.hasValidation }
    }

    /// The location that governs child `key`: the child named `key`, else the wildcard child (then
    /// `captured` is true: `key` is the wildcard's value). `nil` when no rule reaches below.
    func child(_ key: ChildKey) -> (location: RuleLocation, captured: Bool)? {
        if !children.isEmpty, let named = children[key] { return (named, false) }
        if let wildcard { return (wildcard, true) }
        return nil
    }

    func rule(_ kind: RuleKind) -> CompiledRule? {
        switch kind {
        case .read: read
        case .write: write
        case .validate: validate
        }
    }
}
