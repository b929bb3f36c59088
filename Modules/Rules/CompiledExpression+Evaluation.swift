import Tree

extension CompiledExpression {
    /// The value of the expression in `context`; throws when an operand has a type its operator
    /// does not accept (Firebase then fails the whole rule).
    func evaluate(_ context: EvaluationContext) throws(RuleEvaluationError) -> RuleValue {
        switch self {
        case .constant(let value):
            return value
        case .auth:
            return context.check.auth
        case .now:
            return .number(context.check.now)
        case .root:
            return .snapshot(RuleSnapshot(keys: [], node: context.check.root))
        case .data:
            return .snapshot(RuleSnapshot(keys: context.location, node: context.data))
        case .newData:
            return .snapshot(RuleSnapshot(keys: context.location, node: context.newData, isNewData: true))
        case .capture(let depth):
            return .string(context.location[context.location.startIndex + depth].string)
        case .query(let field):
            return field.value(in: context.check.query)
        case .member(let object, let key):
            return try Self.member(key, of: object.evaluate(context))
        case .index(let object, let key):
            let base = try object.evaluate(context)
            return try Self.member(Self.key(try key.evaluate(context)), of: base)
        case .snapshotMethod(let receiver, let method):
            return try method.evaluate(on: receiver.snapshot(context, for: method.name), context)
        case .stringMethod(let receiver, let method):
            let value = try receiver.evaluate(context)
            guard case .string(let string) = value else {
                throw RuleEvaluationError(reason: "\(method.name)() needs a string, got \(value.typeName)")
            }
            return try method.evaluate(on: string, context)
        case .not(let operand):
            return .bool(!(try operand.boolean(context, "'!'")))
        case .negate(let operand):
            let value = try operand.evaluate(context)
            guard case .number(let number) = value else {
                throw RuleEvaluationError(reason: "'-' needs a number, got \(value.typeName)")
            }
            return .number(-number)
        case .arithmetic(let op, let left, let right):
            let (a, b) = (try left.evaluate(context), try right.evaluate(context))
            guard case .number(let x) = a, case .number(let y) = b else {
                throw RuleEvaluationError(reason: "'\(op.rawValue)' needs numbers, got \(a.typeName) and \(b.typeName)")
            }
            return .number(op.apply(x, y))
        case .add(let left, let right):
            return try Self.add(left.evaluate(context), right.evaluate(context))
        case .equal(let left, let right, let negated):
            return .bool(try RuleValue.equal(left.evaluate(context), right.evaluate(context)) != negated)
        case .compare(let op, let left, let right):
            return .bool(try op.apply(left.evaluate(context), right.evaluate(context)))
        case .all(let operands):
            for operand in operands where !(try operand.boolean(context, "'&&'")) { return .bool(false) }
            return .bool(true)
        case .any(let operands):
            for operand in operands where try operand.boolean(context, "'||'") { return .bool(true) }
            return .bool(false)
        case .conditional(let condition, let whenTrue, let whenFalse):
            return try condition.boolean(context, "the condition of '?:'")
                ? whenTrue.evaluate(context) : whenFalse.evaluate(context)
        }
    }

    /// The snapshot the expression gives, which `name()` is called on; `root`, `data` and
    /// `newData` are made directly, without passing through a ``RuleValue``.
    private func snapshot(_ context: EvaluationContext, for name: String) throws(RuleEvaluationError) -> RuleSnapshot {
        switch self {
        case .root:
            return RuleSnapshot(keys: [], node: context.check.root)
        case .data:
            return RuleSnapshot(keys: context.location, node: context.data)
        case .newData:
            return RuleSnapshot(keys: context.location, node: context.newData, isNewData: true)
        case .snapshotMethod(let receiver, .child(let path)):
            return try receiver.snapshot(context, for: "child").child(SnapshotMethod.string(path, context, "child"))
        case .snapshotMethod(let receiver, .parent):
            return try receiver.snapshot(context, for: "parent").parent(context)
        default:
            guard case .snapshot(let snapshot) = try evaluate(context) else {
                throw RuleEvaluationError(reason: "\(name)() needs a RuleDataSnapshot")
            }
            return snapshot
        }
    }

    /// The value of the expression, which must be a boolean for `user`.
    func boolean(_ context: EvaluationContext, _ user: String) throws(RuleEvaluationError) -> Bool {
        let value = try evaluate(context)
        guard case .bool(let result) = value else {
            throw RuleEvaluationError(reason: "\(user) needs a boolean, got \(value.typeName)")
        }
        return result
    }

    /// `object.key`: a member of an object (`null` when absent), `null` for a member of `null`
    /// (so `auth.uid` is `null` when signed out), or the length of a string.
    static func member(_ key: ChildKey, of object: RuleValue) throws(RuleEvaluationError) -> RuleValue {
        switch object {
        case .null:
            return .null
        case .object(let node):
            return RuleValue(node.child(key))
        case .string(let string) where key.string == "length":
            return .number(Double(string.utf16.count))
        default:
            throw RuleEvaluationError(reason: "\(object.typeName) has no member '\(key.string)'")
        }
    }

    /// The key a computed member access names: a string, or an integer (an array index).
    private static func key(_ value: RuleValue) throws(RuleEvaluationError) -> ChildKey {
        switch value {
        case .string(let name):
            return ChildKey(name)
        case .number(let number) where number.rounded() == number && abs(number) < 1e15:
            return ChildKey(String(Int64(number)))
        default:
            throw RuleEvaluationError(reason: "a member cannot be named by a \(value.typeName)")
        }
    }

    /// `+`: numbers add, a string joined to a string or a number concatenates.
    private static func add(_ a: RuleValue, _ b: RuleValue) throws(RuleEvaluationError) -> RuleValue {
        switch (a, b) {
        case (.number(let x), .number(let y)): return .number(x + y)
        case (.string(let x), .string(let y)): return .string(x + y)
        case (.string(let x), .number(let y)): return .string(x + RuleValue.format(number: y))
        case (.number(let x), .string(let y)): return .string(RuleValue.format(number: x) + y)
        default: throw RuleEvaluationError(reason: "'+' needs numbers or strings, got \(a.typeName) and \(b.typeName)")
        }
    }
}

extension ArithmeticOperator {
    /// The operation; dividing by zero gives NaN, as it does in Firebase (`1/0 + ''` is `"NaN"`).
    func apply(_ x: Double, _ y: Double) -> Double {
        switch self {
        case .subtract: x - y
        case .multiply: x * y
        case .divide: y == 0 ? .nan : x / y
        case .remainder: x.truncatingRemainder(dividingBy: y)
        }
    }
}

extension ComparisonOperator {
    /// Numbers compare with numbers and strings with strings (by UTF-16 code unit, as JavaScript
    /// does); any other pair is an error.
    func apply(_ a: RuleValue, _ b: RuleValue) throws(RuleEvaluationError) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            switch self {
            case .less: return x < y
            case .lessOrEqual: return x <= y
            case .greater: return x > y
            case .greaterOrEqual: return x >= y
            }
        case (.string(let x), .string(let y)):
            let ascending = x.utf16.lexicographicallyPrecedes(y.utf16)
            let equal = x.utf16.elementsEqual(y.utf16)
            switch self {
            case .less: return ascending
            case .lessOrEqual: return ascending || equal
            case .greater: return !ascending && !equal
            case .greaterOrEqual: return !ascending
            }
        default:
            throw RuleEvaluationError(reason: "'\(rawValue)' cannot compare \(a.typeName) with \(b.typeName)")
        }
    }
}

extension RuleValue {
    /// `==`: values of different types are unequal; strings are equal when their scalars are.
    static func equal(_ a: RuleValue, _ b: RuleValue) throws(RuleEvaluationError) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.unicodeScalars.elementsEqual(y.unicodeScalars)
        case (.object(let x), .object(let y)): return x == y
        case (.snapshot, _), (_, .snapshot): throw RuleEvaluationError(reason: "a RuleDataSnapshot cannot be compared")
        default: return false
        }
    }
}

extension QueryField {
    /// The member's value for `query` (`nil` for a read without a query).
    func value(in query: RuleQuery?) -> RuleValue {
        switch self {
        case .orderByKey: return .bool(query?.orderBy == .key)
        case .orderByValue: return .bool(query?.orderBy == .value)
        case .orderByPriority: return .bool(query?.orderBy == .priority)
        case .orderByChild:
            guard case .child(let path)? = query?.orderBy else { return .null }
            return .string(path.wireString)
        case .startAt: return query?.startAt.map { RuleValue($0.value) } ?? .null
        case .endAt: return query?.endAt.map { RuleValue($0.value) } ?? .null
        case .equalTo: return query?.equalTo.map { RuleValue($0.value) } ?? .null
        case .limitToFirst: return query?.limitToFirst.map { .number(Double($0)) } ?? .null
        case .limitToLast: return query?.limitToLast.map { .number(Double($0)) } ?? .null
        }
    }
}

extension RuleSnapshot {
    /// The location above this one, in the tree this one belongs to.
    func parent(_ context: EvaluationContext) throws(RuleEvaluationError) -> RuleSnapshot {
        guard let parent = parent(in: isNewData ? context.check.newTree.root : context.check.root) else {
            throw RuleEvaluationError(reason: "the root has no parent")
        }
        return parent
    }
}

extension SnapshotMethod {
    func evaluate(on snapshot: RuleSnapshot, _ context: EvaluationContext) throws(RuleEvaluationError) -> RuleValue {
        switch self {
        case .val:
            return RuleValue(snapshot.node)
        case .child(let path):
            return .snapshot(snapshot.child(try Self.string(path, context, name)))
        case .parent:
            return .snapshot(try snapshot.parent(context))
        case .hasChild(let path):
            return .bool(!snapshot.childNode(try Self.string(path, context, name)).isEmpty)
        case .hasChildren(nil):
            return .bool(snapshot.node.childCount > 0)
        case .hasChildren(let keys?):
            var all = true
            for key in keys where snapshot.childNode(try Self.string(key, context, name)).isEmpty { all = false }
            return .bool(all)
        case .exists:
            return .bool(!snapshot.node.isEmpty)
        case .getPriority:
            return snapshot.node.priority.map { RuleValue($0.leafValue) } ?? .null
        case .isNumber:
            if case .number? = snapshot.node.leafValue { return .bool(true) }
            return .bool(false)
        case .isString:
            if case .string? = snapshot.node.leafValue { return .bool(true) }
            return .bool(false)
        case .isBoolean:
            if case .bool? = snapshot.node.leafValue { return .bool(true) }
            return .bool(false)
        }
    }

    /// The value of the argument `expression` of method `name`, which must be a string.
    static func string(
        _ expression: CompiledExpression, _ context: EvaluationContext, _ name: String
    ) throws(RuleEvaluationError) -> String {
        let value = try expression.evaluate(context)
        guard case .string(let string) = value else {
            throw RuleEvaluationError(reason: "\(name)() needs a string argument, got \(value.typeName)")
        }
        return string
    }
}

extension StringMethod {
    /// The method applied to `string`. Substrings are found by Unicode scalar, not by grapheme:
    /// `"e\u{301}".contains("e")` is true, as in JavaScript.
    func evaluate(on string: String, _ context: EvaluationContext) throws(RuleEvaluationError) -> RuleValue {
        switch self {
        case .contains(let argument):
            let needle = try SnapshotMethod.string(argument, context, name)
            return .bool(string.utf8.firstRange(of: needle.utf8) != nil || needle.isEmpty)
        case .beginsWith(let argument):
            return .bool(string.utf8.starts(with: try SnapshotMethod.string(argument, context, name).utf8))
        case .endsWith(let argument):
            let suffix = try SnapshotMethod.string(argument, context, name)
            return .bool(string.utf8.reversed().starts(with: suffix.utf8.reversed()))
        case .replace(let target, let replacement):
            let needle = try SnapshotMethod.string(target, context, name)
            let substitute = try SnapshotMethod.string(replacement, context, name)
            return .string(Self.replacingAll(needle, with: substitute, in: string))
        case .toLowerCase:
            return .string(string.lowercased())
        case .toUpperCase:
            return .string(string.uppercased())
        case .matches(let pattern):
            return .bool(pattern.matches(string))
        }
    }

    /// `string` with every occurrence of `needle` replaced (an empty needle replaces nothing).
    private static func replacingAll(_ needle: String, with substitute: String, in string: String) -> String {
        guard !needle.isEmpty else { return string }
        var result = ""
        var rest = Substring(string).utf8[...]
        while let range = rest.firstRange(of: needle.utf8) {
            result += String(Substring(rest[..<range.lowerBound]))
            result += substitute
            rest = rest[range.upperBound...]
        }
        result += String(Substring(rest))
        return result
    }
}
