import Tree

/// One `.read`, `.write` or `.validate` rule, compiled.
final class CompiledRule: Sendable {
    let kind: RuleKind
    /// The location of the rule in the document (`/users/$uid`).
    let rulePath: String
    /// The expression as written.
    let source: String
    let expression: CompiledExpression
    /// ``expression`` as closures, which is what is evaluated.
    private let condition: ConditionEvaluator
    /// Whether the expression reads `newData` (otherwise a check need not work out the new data).
    let readsNewData: Bool
    /// Whether the expression reads `data` (otherwise a check need not look the location up).
    let readsData: Bool
    /// Whether the expression reads `data`, `newData` or `root`.
    let readsAnyData: Bool
    /// Whether the expression needs the location's keys: for a wildcard variable, `data`,
    /// `newData` (and their `parent()`).
    let readsLocation: Bool

    init(kind: RuleKind, rulePath: String, source: String, expression: CompiledExpression) {
        self.kind = kind
        self.rulePath = rulePath
        self.source = source
        self.expression = expression
        readsNewData = expression.mentionsNewData
        readsData = expression.mentionsData
        readsAnyData =
            readsData || readsNewData || expression.mentions { if case .root = $0 { true } else { false } }
        condition = expression.conditionEvaluator { "the rule evaluated to a \($0), not a boolean" }
        readsLocation =
            readsData || readsNewData || expression.mentions { if case .capture = $0 { true } else { false } }
    }

    /// Evaluates the rule; an evaluation that fails, or gives something other than a boolean,
    /// counts as false.
    func evaluate(in context: inout EvaluationContext) -> RuleOutcome {
        do {
            return try condition(&context) ? .passed : .failed(error: nil)
        } catch let error as RuleEvaluationError {
            return .failed(error: error.reason)
        } catch {
            return .failed(error: "\(error)")
        }
    }

    /// This rule as applied at the data location `keys`.
    func reference(at keys: ArraySlice<ChildKey>) -> RuleReference {
        RuleReference(
            kind: kind, rulePath: rulePath, path: Path(keys: keys), expression: source, readsData: readsAnyData)
    }
}

/// How evaluating a rule ended.
enum RuleOutcome {
    case passed
    /// False, or failed with `error`.
    case failed(error: String?)
}
