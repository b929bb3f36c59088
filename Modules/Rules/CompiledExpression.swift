import Tree

/// A rule expression compiled once, when the document is parsed: names resolved (a wildcard
/// variable is a slot number, a method an enum case) and types checked as far as they can be, so
/// that evaluating it walks this tree and nothing else.
indirect enum CompiledExpression: Sendable {
    case constant(RuleValue)
    case auth
    case now
    case root
    case data
    case newData
    /// The value of a wildcard above the rule: the key at this depth of the location (0: a child
    /// of the root).
    case capture(Int)
    case query(QueryField)
    /// `object.key` on an object or `null` (and `length` of a string).
    case member(CompiledExpression, ChildKey)
    /// `object[key]` with a computed key.
    case index(CompiledExpression, key: CompiledExpression)
    case snapshotMethod(CompiledExpression, SnapshotMethod)
    case stringMethod(CompiledExpression, StringMethod)
    case not(CompiledExpression)
    case negate(CompiledExpression)
    case arithmetic(ArithmeticOperator, CompiledExpression, CompiledExpression)
    case add(CompiledExpression, CompiledExpression)
    case equal(CompiledExpression, CompiledExpression, negated: Bool)
    case compare(ComparisonOperator, CompiledExpression, CompiledExpression)
    /// `a && b && …`: false at the first false operand.
    case all([CompiledExpression])
    /// `a || b || …`: true at the first true operand.
    case any([CompiledExpression])
    case conditional(CompiledExpression, then: CompiledExpression, else: CompiledExpression)
}

/// The members of the `query` variable.
enum QueryField: String, Sendable, CaseIterable {
    case orderByKey, orderByValue, orderByPriority, orderByChild
    case startAt, endAt, equalTo
    case limitToFirst, limitToLast

    var type: StaticType {
        switch self {
        case .orderByKey, .orderByValue, .orderByPriority: .boolean
        case .orderByChild: [.string, .null]
        case .startAt, .endAt, .equalTo: .primitive
        case .limitToFirst, .limitToLast: [.number, .null]
        }
    }
}

enum ArithmeticOperator: String, Sendable {
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
}

enum ComparisonOperator: String, Sendable {
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

extension CompiledExpression {
    /// Whether `newData` appears anywhere in the expression.
    var mentionsNewData: Bool { mentions { if case .newData = $0 { true } else { false } } }

    /// Whether `data` appears anywhere in the expression.
    var mentionsData: Bool { mentions { if case .data = $0 { true } else { false } } }

    /// Whether `matches` holds for this expression or one inside it.
    func mentions(_ matches: (CompiledExpression) -> Bool) -> Bool {
        if matches(self) { return true }
        switch self {
        case .constant, .auth, .now, .root, .data, .newData, .capture, .query: return false
        case .member(let base, _), .not(let base), .negate(let base): return base.mentions(matches)
        case .index(let base, let key): return base.mentions(matches) || key.mentions(matches)
        case .snapshotMethod(let base, let method):
            return base.mentions(matches) || method.arguments.contains { $0.mentions(matches) }
        case .stringMethod(let base, let method):
            return base.mentions(matches) || method.arguments.contains { $0.mentions(matches) }
        case .arithmetic(_, let left, let right), .add(let left, let right), .equal(let left, let right, _),
            .compare(_, let left, let right):
            return left.mentions(matches) || right.mentions(matches)
        case .all(let operands), .any(let operands): return operands.contains { $0.mentions(matches) }
        case .conditional(let condition, let then, let otherwise):
            return condition.mentions(matches) || then.mentions(matches) || otherwise.mentions(matches)
        }
    }
}

extension SnapshotMethod {
    /// The expressions passed to the method.
    var arguments: [CompiledExpression] {
        switch self {
        case .child(let path), .hasChild(let path): [path]
        case .hasChildren(let keys): keys ?? []
        case .val, .parent, .exists, .getPriority, .isNumber, .isString, .isBoolean: []
        }
    }
}

extension StringMethod {
    /// The expressions passed to the method.
    var arguments: [CompiledExpression] {
        switch self {
        case .contains(let argument), .beginsWith(let argument), .endsWith(let argument): [argument]
        case .replace(let pattern, let replacement): [pattern, replacement]
        case .toLowerCase, .toUpperCase, .matches: []
        }
    }
}
