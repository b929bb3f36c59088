import Tree

/// Turns the text of one rule into a ``CompiledExpression``, refusing what Firebase refuses when
/// rules are set: unknown variables, members and methods, wrong arguments, operands that can never
/// have a type the operator accepts, and rules that cannot be boolean.
struct ExpressionCompiler {
    /// The kind of rule compiled: `newData` exists only in `.write` and `.validate` rules, `query`
    /// only in `.read` rules.
    let kind: RuleKind
    /// The wildcards above the rule (without `$`) by depth: `captures[d]` names the key at depth
    /// `d` of the rule's location, `nil` for a named key.
    let captures: [String?]

    /// An expression with what can be known of its value.
    struct Typed {
        var expression: CompiledExpression
        var type: StaticType
    }

    /// Compiles the rule `text`, which must be a boolean expression.
    func compileRule(_ text: String) throws(ExpressionError) -> CompiledExpression {
        let syntax = try ExpressionParser.parse(text)
        let typed = try compile(syntax)
        guard typed.type.contains(.boolean) else {
            throw ExpressionError(
                offset: syntax.offset, reason: "a rule must be a boolean expression, not \(typed.type.described)")
        }
        return typed.expression
    }

    private func compile(_ node: SyntaxNode) throws(ExpressionError) -> Typed {
        switch node.syntax {
        case .identifier(let name):
            return try variable(name, at: node.offset)
        case .number(let value):
            return Typed(expression: .constant(.number(value)), type: .number)
        case .string(let value):
            return Typed(expression: .constant(.string(value)), type: .string)
        case .boolean(let value):
            return Typed(expression: .constant(.bool(value)), type: .boolean)
        case .null:
            return Typed(expression: .constant(.null), type: .null)
        case .regex:
            throw ExpressionError(
                offset: node.offset, reason: "a regular expression can only be the argument of matches()")
        case .array:
            throw ExpressionError(offset: node.offset, reason: "an array can only be the argument of hasChildren()")
        case .not(let operand):
            let typed = try require(compile(operand), .boolean, at: operand.offset, "'!' needs a boolean")
            return Typed(expression: .not(typed.expression), type: .boolean)
        case .negate(let operand):
            let typed = try require(compile(operand), .number, at: operand.offset, "'-' needs a number")
            return Typed(expression: .negate(typed.expression), type: .number)
        case .binary(let op, let left, let right):
            return try binary(op, compile(left), compile(right), at: node.offset)
        case .logical(let op, let operands):
            var compiled: [CompiledExpression] = []
            for operand in operands {
                let typed = try require(
                    compile(operand), .boolean, at: operand.offset, "'\(op.rawValue)' needs booleans")
                compiled.append(typed.expression)
            }
            return Typed(expression: op == .and ? .all(compiled) : .any(compiled), type: .boolean)
        case .conditional(let condition, let whenTrue, let whenFalse):
            return try conditional(condition, whenTrue, whenFalse, at: node.offset)
        case .member(let object, let name):
            return try member(compile(object), name, at: node.offset)
        case .index(let object, let key):
            return try index(compile(object), key, at: node.offset)
        case .call(let callee, let arguments):
            return try call(callee, arguments, at: node.offset)
        }
    }

    private func variable(_ name: String, at offset: Int) throws(ExpressionError) -> Typed {
        switch name {
        case "auth":
            return Typed(expression: .auth, type: .json)
        case "now":
            return Typed(expression: .now, type: .number)
        case "root":
            return Typed(expression: .root, type: .snapshot)
        case "data":
            return Typed(expression: .data, type: .snapshot)
        case "newData":
            guard kind != .read else {
                throw ExpressionError(offset: offset, reason: "newData is only available in .write and .validate rules")
            }
            return Typed(expression: .newData, type: .snapshot)
        case "query":
            guard kind == .read else {
                throw ExpressionError(offset: offset, reason: "query is only available in .read rules")
            }
            return Typed(expression: .constant(.null), type: .query)
        default:
            guard name.hasPrefix("$") else {
                throw ExpressionError(offset: offset, reason: "unknown variable '\(name)'")
            }
            guard let depth = captures.firstIndex(of: String(name.dropFirst())) else {
                throw ExpressionError(
                    offset: offset, reason: "unknown variable '\(name)': no \(name) location encloses this rule")
            }
            return Typed(expression: .capture(depth), type: .string)
        }
    }

    /// `typed` if it can have one of the `allowed` types; refused otherwise.
    private func require(
        _ typed: Typed, _ allowed: StaticType, at offset: Int, _ message: String
    ) throws(ExpressionError) -> Typed {
        guard typed.type.isDisjoint(with: allowed) else { return typed }
        throw ExpressionError(offset: offset, reason: "\(message), not \(typed.type.described)")
    }

    // MARK: Operators

    private func binary(
        _ op: BinaryOperator, _ left: Typed, _ right: Typed, at offset: Int
    ) throws(ExpressionError) -> Typed {
        let symbol = op.rawValue
        switch op {
        case .add:
            let message = "'+' needs numbers or strings"
            _ = try require(left, [.number, .string], at: offset, message)
            _ = try require(right, [.number, .string], at: offset, message)
            let type: StaticType =
                left.type == .string || right.type == .string
                ? .string : (left.type == .number && right.type == .number ? .number : [.number, .string])
            return Typed(expression: .add(left.expression, right.expression), type: type)
        case .subtract, .multiply, .divide, .remainder:
            let message = "'\(symbol)' needs numbers"
            _ = try require(left, .number, at: offset, message)
            _ = try require(right, .number, at: offset, message)
            let arithmetic = ArithmeticOperator(rawValue: symbol) ?? .subtract
            return Typed(expression: .arithmetic(arithmetic, left.expression, right.expression), type: .number)
        case .equal, .strictEqual, .notEqual, .strictNotEqual:
            for side in [left, right] where !side.type.isSubset(of: .json) {
                let hint = side.type == .snapshot ? " (compare its val())" : ""
                throw ExpressionError(
                    offset: offset, reason: "'\(symbol)' cannot compare \(side.type.described)\(hint)")
            }
            let negated = op == .notEqual || op == .strictNotEqual
            return Typed(expression: .equal(left.expression, right.expression, negated: negated), type: .boolean)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let message = "'\(symbol)' compares numbers or strings"
            _ = try require(left, [.number, .string, .null], at: offset, message)
            _ = try require(right, [.number, .string, .null], at: offset, message)
            if !left.type.isUncertain, !right.type.isUncertain, left.type != right.type,
                !left.type.contains(.null), !right.type.contains(.null)
            {
                throw ExpressionError(
                    offset: offset,
                    reason: "'\(symbol)' cannot compare \(left.type.described) with \(right.type.described)")
            }
            let comparison = ComparisonOperator(rawValue: symbol) ?? .less
            return Typed(expression: .compare(comparison, left.expression, right.expression), type: .boolean)
        case .and, .or:
            // The parser makes logical chains ``ExpressionSyntax/logical(_:_:)`` nodes.
            let operands = [left, right].map(\.expression)
            return Typed(expression: op == .and ? .all(operands) : .any(operands), type: .boolean)
        }
    }

    private func conditional(
        _ condition: SyntaxNode, _ whenTrue: SyntaxNode, _ whenFalse: SyntaxNode, at offset: Int
    ) throws(ExpressionError) -> Typed {
        let test = try require(
            compile(condition), .boolean, at: condition.offset, "the condition of '?:' must be a boolean")
        let first = try compile(whenTrue)
        let second = try compile(whenFalse)
        let expression = CompiledExpression.conditional(
            test.expression, then: first.expression, else: second.expression)
        if first.type == second.type { return Typed(expression: expression, type: first.type) }
        let mixable =
            first.type.isSubset(of: .json) && second.type.isSubset(of: .json)
            && (first.type.isUncertain || second.type.isUncertain || first.type == .null || second.type == .null)
        guard mixable else {
            throw ExpressionError(
                offset: offset,
                reason: "both branches of '?:' must have the same type, not \(first.type.described)"
                    + " and \(second.type.described)")
        }
        return Typed(expression: expression, type: first.type.union(second.type))
    }

    // MARK: Members

    private func member(_ object: Typed, _ name: String, at offset: Int) throws(ExpressionError) -> Typed {
        if object.type == .snapshot {
            let reason =
                SnapshotMethodName(rawValue: name) != nil
                ? "\(name) is a method of RuleDataSnapshot: call it as \(name)()"
                : "RuleDataSnapshot has no member '\(name)'"
            throw ExpressionError(offset: offset, reason: reason)
        }
        if object.type == .query {
            guard let field = QueryField(rawValue: name) else {
                let known = QueryField.allCases.map(\.rawValue).joined(separator: ", ")
                throw ExpressionError(offset: offset, reason: "query has no member '\(name)' (it has \(known))")
            }
            return Typed(expression: .query(field), type: field.type)
        }
        if object.type.isSubset(of: .json), object.type.contains(.object) {
            return Typed(expression: .member(object.expression, ChildKey(name)), type: .json)
        }
        if object.type.isSubset(of: .json), object.type.contains(.string) {
            if name == "length" {
                return Typed(expression: .member(object.expression, ChildKey(name)), type: .number)
            }
            if StringMethodName(rawValue: name) != nil {
                throw ExpressionError(offset: offset, reason: "\(name) is a method of strings: call it as \(name)()")
            }
        }
        throw ExpressionError(offset: offset, reason: "\(object.type.described) has no member '\(name)'")
    }

    private func index(_ object: Typed, _ key: SyntaxNode, at offset: Int) throws(ExpressionError) -> Typed {
        if case .string(let name) = key.syntax {
            return try member(object, name, at: key.offset)
        }
        guard object.type.isSubset(of: .json), object.type.contains(.object) else {
            throw ExpressionError(
                offset: offset,
                reason: "\(object.type.described) can only be indexed by a string literal naming a member")
        }
        let keyTyped = try require(
            compile(key), [.string, .number], at: key.offset, "a key must be a string or a number")
        return Typed(expression: .index(object.expression, key: keyTyped.expression), type: .json)
    }

    // MARK: Methods

    private func call(
        _ callee: SyntaxNode, _ arguments: [SyntaxNode], at offset: Int
    ) throws(ExpressionError) -> Typed {
        let receiverSyntax: SyntaxNode
        let name: String
        switch callee.syntax {
        case .member(let object, let member):
            (receiverSyntax, name) = (object, member)
        case .index(let object, let key):
            guard case .string(let member) = key.syntax else {
                throw ExpressionError(offset: key.offset, reason: "a method must be named by a string literal")
            }
            (receiverSyntax, name) = (object, member)
        default:
            throw ExpressionError(offset: offset, reason: "only methods of RuleDataSnapshot and string can be called")
        }
        let receiver = try compile(receiverSyntax)
        let call = MethodCall(name: name, arguments: arguments, offset: offset)
        if receiver.type == .snapshot {
            guard let method = SnapshotMethodName(rawValue: name) else {
                throw ExpressionError(offset: offset, reason: "RuleDataSnapshot has no method '\(name)'")
            }
            return try snapshotCall(receiver.expression, method, call)
        }
        if receiver.type.isSubset(of: .json), receiver.type.contains(.string) {
            guard let method = StringMethodName(rawValue: name) else {
                throw ExpressionError(offset: offset, reason: "\(receiver.type.described) has no method '\(name)'")
            }
            return try stringCall(receiver.expression, method, call)
        }
        throw ExpressionError(offset: offset, reason: "\(receiver.type.described) has no method '\(name)'")
    }

    /// A call being compiled: the method's name, its argument syntax and where it is.
    private struct MethodCall {
        var name: String
        var arguments: [SyntaxNode]
        var offset: Int
    }

    /// The arguments of `call`, which takes `count` string arguments.
    private func stringArguments(_ call: MethodCall, count: Int) throws(ExpressionError) -> [CompiledExpression] {
        guard call.arguments.count == count else {
            let plural = count == 1 ? "argument" : "arguments"
            throw ExpressionError(
                offset: call.offset, reason: "\(call.name)() takes \(count) \(plural), got \(call.arguments.count)")
        }
        var compiled: [CompiledExpression] = []
        for argument in call.arguments {
            let typed = try require(
                compile(argument), .string, at: argument.offset, "\(call.name)() needs a string argument")
            compiled.append(typed.expression)
        }
        return compiled
    }

    /// `result` for `call`, which takes no argument.
    private func noArguments<Method>(_ call: MethodCall, _ result: Method) throws(ExpressionError) -> Method {
        _ = try stringArguments(call, count: 0)
        return result
    }

    private func snapshotCall(
        _ receiver: CompiledExpression, _ method: SnapshotMethodName, _ call: MethodCall
    ) throws(ExpressionError) -> Typed {
        let compiled: SnapshotMethod
        switch method {
        case .val: compiled = try noArguments(call, .val)
        case .child: compiled = .child(try stringArguments(call, count: 1)[0])
        case .parent: compiled = try noArguments(call, .parent)
        case .hasChild: compiled = .hasChild(try stringArguments(call, count: 1)[0])
        case .hasChildren: compiled = .hasChildren(try hasChildrenKeys(call))
        case .exists: compiled = try noArguments(call, .exists)
        case .getPriority: compiled = try noArguments(call, .getPriority)
        case .isNumber: compiled = try noArguments(call, .isNumber)
        case .isString: compiled = try noArguments(call, .isString)
        case .isBoolean: compiled = try noArguments(call, .isBoolean)
        }
        return Typed(expression: .snapshotMethod(receiver, compiled), type: method.returnType)
    }

    /// The keys of `hasChildren([...])`, or `nil` for `hasChildren()`.
    private func hasChildrenKeys(_ call: MethodCall) throws(ExpressionError) -> [CompiledExpression]? {
        if call.arguments.isEmpty { return nil }
        let reason = "hasChildren() takes no argument or one non-empty array of strings"
        guard call.arguments.count == 1, case .array(let elements) = call.arguments[0].syntax, !elements.isEmpty else {
            throw ExpressionError(
                offset: call.arguments.count == 1 ? call.arguments[0].offset : call.offset, reason: reason)
        }
        var keys: [CompiledExpression] = []
        for element in elements {
            keys.append(
                try require(compile(element), .string, at: element.offset, "hasChildren() needs strings").expression)
        }
        return keys
    }

    private func stringCall(
        _ receiver: CompiledExpression, _ method: StringMethodName, _ call: MethodCall
    ) throws(ExpressionError) -> Typed {
        let compiled: StringMethod
        switch method {
        case .contains: compiled = .contains(try stringArguments(call, count: 1)[0])
        case .beginsWith: compiled = .beginsWith(try stringArguments(call, count: 1)[0])
        case .endsWith: compiled = .endsWith(try stringArguments(call, count: 1)[0])
        case .replace:
            let arguments = try stringArguments(call, count: 2)
            compiled = .replace(arguments[0], with: arguments[1])
        case .toLowerCase: compiled = try noArguments(call, .toLowerCase)
        case .toUpperCase: compiled = try noArguments(call, .toUpperCase)
        case .matches: compiled = .matches(try pattern(call))
        }
        return Typed(expression: .stringMethod(receiver, compiled), type: method.returnType)
    }

    private func pattern(_ call: MethodCall) throws(ExpressionError) -> RulePattern {
        guard call.arguments.count == 1, case .regex(let pattern, let flags) = call.arguments[0].syntax else {
            let offset = call.arguments.first?.offset ?? call.offset
            throw ExpressionError(
                offset: offset, reason: "matches() takes one regular expression literal, such as /^a/")
        }
        let literalOffset = call.arguments[0].offset
        do {
            return try RulePattern(pattern: pattern, flags: flags)
        } catch {
            let offset =
                error.inFlags
                ? literalOffset + pattern.unicodeScalars.count + 2 + error.offset : literalOffset + 1 + error.offset
            throw ExpressionError(offset: offset, reason: error.reason)
        }
    }
}
