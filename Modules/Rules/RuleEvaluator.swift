import Tree

/// A compiled expression turned into nested closures when the document is compiled: each closure
/// holds its operands' closures, so evaluating runs direct calls instead of switching on the
/// expression tree at every node, and booleans and snapshots never pass through a ``RuleValue``.
/// The interpreter (`CompiledExpression.evaluate(_:)`) gives the same results and errors; it
/// still evaluates what is rare in rules (method arguments, arithmetic).
typealias ValueEvaluator = @Sendable (inout EvaluationContext) throws -> RuleValue
/// See ``ValueEvaluator``: an expression that must give a boolean.
typealias ConditionEvaluator = @Sendable (inout EvaluationContext) throws -> Bool
/// See ``ValueEvaluator``: an expression whose result a snapshot method is called on.
typealias SnapshotEvaluator = @Sendable (inout EvaluationContext) throws -> RuleSnapshot
/// See ``ValueEvaluator``: the node of a snapshot a method is called on.
typealias NodeEvaluator = @Sendable (inout EvaluationContext) throws -> Node
/// See ``ValueEvaluator``: an expression whose result a string method is called on.
typealias StringEvaluator = @Sendable (inout EvaluationContext) throws -> String

extension CompiledExpression {
    /// The expression as a closure giving its value.
    func valueEvaluator() -> ValueEvaluator {
        switch self {
        case .constant(let value):
            return { _ in value }
        case .auth:
            return { $0.check.auth }
        case .now:
            return { .number($0.check.now) }
        case .capture(let depth):
            return { .string($0.location[$0.location.startIndex + depth].string) }
        case .member(let object, let key):
            let object = object.valueEvaluator()
            return { context throws in try Self.member(key, of: object(&context)) }
        case .snapshotMethod(let receiver, .val):
            let node = receiver.nodeEvaluator(receiverOf: "val")
            return { context throws in RuleValue(try node(&context)) }
        case .not, .equal, .compare, .all, .any,
            .snapshotMethod(_, .exists), .snapshotMethod(_, .isNumber), .snapshotMethod(_, .isString),
            .snapshotMethod(_, .isBoolean), .stringMethod(_, .beginsWith(.constant(.string))),
            .stringMethod(_, .matches):
            // Each of these gives a boolean, which conditionEvaluator makes without a fallback.
            let condition = conditionEvaluator { "\($0) is not a boolean" }
            return { context throws in .bool(try condition(&context)) }
        case .conditional(let condition, let whenTrue, let whenFalse):
            let condition = condition.conditionEvaluator { "the condition of '?:' needs a boolean, got \($0)" }
            let (whenTrue, whenFalse) = (whenTrue.valueEvaluator(), whenFalse.valueEvaluator())
            return { context throws in
                try condition(&context) ? whenTrue(&context) : whenFalse(&context)
            }
        default:
            return { context throws in try self.evaluate(context) }
        }
    }

    /// The expression as a closure giving a boolean; any other value is an error saying
    /// `notBoolean(typeName)`.
    func conditionEvaluator(notBoolean: @escaping @Sendable (String) -> String) -> ConditionEvaluator {
        switch self {
        case .constant(.bool(let value)):
            return { _ in value }
        case .not(let operand):
            let operand = operand.conditionEvaluator { "'!' needs a boolean, got \($0)" }
            return { context throws in !(try operand(&context)) }
        case .equal(let left, let right, let negated):
            let (left, right) = (left.valueEvaluator(), right.valueEvaluator())
            return { context throws in
                try RuleValue.equal(left(&context), right(&context)) != negated
            }
        case .compare(let op, let left, let right):
            let (left, right) = (left.valueEvaluator(), right.valueEvaluator())
            return { context throws in try op.apply(left(&context), right(&context)) }
        case .all(let operands):
            let operands = operands.map { $0.conditionEvaluator { "'&&' needs a boolean, got \($0)" } }
            return { context throws in
                for operand in operands where !(try operand(&context)) { return false }
                return true
            }
        case .any(let operands):
            let operands = operands.map { $0.conditionEvaluator { "'||' needs a boolean, got \($0)" } }
            return { context throws in
                for operand in operands where try operand(&context) { return true }
                return false
            }
        case .snapshotMethod(let receiver, .exists):
            let node = receiver.nodeEvaluator(receiverOf: "exists")
            return { context throws in !(try node(&context)).isEmpty }
        case .snapshotMethod(let receiver, .isNumber):
            let node = receiver.nodeEvaluator(receiverOf: "isNumber")
            return { context throws in
                if case .number? = try node(&context).leafValue { true } else { false }
            }
        case .snapshotMethod(let receiver, .isString):
            let node = receiver.nodeEvaluator(receiverOf: "isString")
            return { context throws in
                if case .string? = try node(&context).leafValue { true } else { false }
            }
        case .snapshotMethod(let receiver, .isBoolean):
            let node = receiver.nodeEvaluator(receiverOf: "isBoolean")
            return { context throws in
                if case .bool? = try node(&context).leafValue { true } else { false }
            }
        case .stringMethod(let receiver, .beginsWith(.constant(.string(let prefix)))):
            let string = receiver.stringEvaluator(receiverOf: "beginsWith")
            return { context throws in try string(&context).utf8.starts(with: prefix.utf8) }
        case .stringMethod(let receiver, .matches(let pattern)):
            let string = receiver.stringEvaluator(receiverOf: "matches")
            return { context throws in pattern.matches(try string(&context)) }
        default:
            let value = valueEvaluator()
            return { context throws in
                let result = try value(&context)
                guard case .bool(let result) = result else {
                    throw RuleEvaluationError(reason: notBoolean(result.typeName))
                }
                return result
            }
        }
    }

    /// A closure giving the node of the snapshot this expression is, which `name()` is called on;
    /// for `root`, `data` and `newData` made without a snapshot.
    private func nodeEvaluator(receiverOf name: String) -> NodeEvaluator {
        switch self {
        case .root: return { $0.check.root }
        case .data: return { $0.data }
        case .newData: return { $0.newData }
        default:
            let snapshot = snapshotEvaluator(receiverOf: name, locating: false)
            return { context throws in try snapshot(&context).node }
        }
    }

    /// A closure giving the snapshot this expression is, which `name()` is called on. Unless
    /// `locating` (the snapshot's location is needed: `parent()` is called on it or on one made
    /// from it), `child()` finds the node without keeping the way to it.
    private func snapshotEvaluator(receiverOf name: String, locating: Bool) -> SnapshotEvaluator {
        switch self {
        case .root:
            return { RuleSnapshot(keys: [], node: $0.check.root) }
        case .data:
            return { RuleSnapshot(keys: $0.location, node: $0.data) }
        case .newData:
            return { RuleSnapshot(keys: $0.location, node: $0.newData, isNewData: true) }
        case .snapshotMethod(let receiver, .child(.constant(.string(let path)))):
            let receiver = receiver.snapshotEvaluator(receiverOf: "child", locating: locating)
            return { context throws in try receiver(&context).child(path, locating: locating) }
        case .snapshotMethod(let receiver, .child(let argument)):
            let receiver = receiver.snapshotEvaluator(receiverOf: "child", locating: locating)
            let argument = argument.valueEvaluator()
            return { context throws in
                let snapshot = try receiver(&context)
                let path = try argument(&context)
                guard case .string(let path) = path else {
                    throw RuleEvaluationError(reason: "child() needs a string argument, got \(path.typeName)")
                }
                return snapshot.child(path, locating: locating)
            }
        case .snapshotMethod(let receiver, .parent):
            let receiver = receiver.snapshotEvaluator(receiverOf: "parent", locating: true)
            return { context throws in try receiver(&context).parent(context) }
        default:
            return { context throws in
                guard case .snapshot(let snapshot) = try self.evaluate(context) else {
                    throw RuleEvaluationError(reason: "\(name)() needs a RuleDataSnapshot")
                }
                return snapshot
            }
        }
    }

    /// A closure giving the string this expression is, which `name()` is called on.
    private func stringEvaluator(receiverOf name: String) -> StringEvaluator {
        let value = valueEvaluator()
        return { context throws in
            let result = try value(&context)
            guard case .string(let string) = result else {
                throw RuleEvaluationError(reason: "\(name)() needs a string, got \(result.typeName)")
            }
            return string
        }
    }
}
