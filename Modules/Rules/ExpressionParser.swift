/// Parses a rule expression (JavaScript expression syntax, restricted to what rules allow) into a
/// syntax tree.
///
/// Precedence, loosest first: `?:`, `||`, `&&`, `==` `===` `!=` `!==`, `<` `<=` `>` `>=`, `+` `-`,
/// `*` `/` `%`, unary `!` `-`, then member access, indexing and calls.
struct ExpressionParser {
    /// Deepest nesting accepted, so that hostile input cannot exhaust the stack.
    static let maxNesting = 256

    private let tokens: [ExpressionToken]
    private var index = 0
    private var depth = 0

    init(tokens: [ExpressionToken]) {
        self.tokens = tokens
    }

    /// Parses `text` as one expression.
    static func parse(_ text: String) throws(ExpressionError) -> SyntaxNode {
        var parser = ExpressionParser(tokens: try ExpressionLexer.tokens(of: text))
        guard parser.current.kind != .end else {
            throw ExpressionError(offset: 0, reason: "empty expression")
        }
        let node = try parser.expression()
        guard parser.current.kind == .end else {
            throw ExpressionError(offset: parser.current.offset, reason: "unexpected \(parser.current.spelling)")
        }
        return node
    }

    private var current: ExpressionToken { tokens[index] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func isSymbol(_ symbol: String) -> Bool {
        current.kind == .symbol(symbol)
    }

    private mutating func expect(_ symbol: String, _ context: String) throws(ExpressionError) {
        guard isSymbol(symbol) else {
            throw ExpressionError(
                offset: current.offset, reason: "expected '\(symbol)' \(context), found \(current.spelling)")
        }
        advance()
    }

    private mutating func nested<T>(
        _ body: (inout ExpressionParser) throws(ExpressionError) -> T
    ) throws(ExpressionError) -> T {
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxNesting {
            throw ExpressionError(
                offset: current.offset, reason: "expression nested deeper than \(Self.maxNesting) levels")
        }
        return try body(&self)
    }

    private mutating func expression() throws(ExpressionError) -> SyntaxNode {
        try nested { parser throws(ExpressionError) in try parser.conditional() }
    }

    private mutating func conditional() throws(ExpressionError) -> SyntaxNode {
        let condition = try binary(minimumPrecedence: 1)
        guard isSymbol("?") else { return condition }
        let offset = current.offset
        advance()
        let whenTrue = try expression()
        try expect(":", "in a conditional expression")
        let whenFalse = try expression()
        return SyntaxNode(syntax: .conditional(condition, whenTrue, whenFalse), offset: offset)
    }

    /// Binary operators by precedence climbing; all are left-associative. A chain of one logical
    /// operator becomes one ``ExpressionSyntax/logical(_:_:)`` node; other chains nest, and count
    /// toward the nesting limit.
    private mutating func binary(minimumPrecedence: Int) throws(ExpressionError) -> SyntaxNode {
        var left = try unary()
        let outerDepth = depth
        defer { depth = outerDepth }
        while case .symbol(let symbol) = current.kind, let op = BinaryOperator(rawValue: symbol),
            op.precedence >= minimumPrecedence
        {
            let offset = current.offset
            advance()
            let right = try binary(minimumPrecedence: op.precedence + 1)
            if op == .and || op == .or {
                if case .logical(op, var operands) = left.syntax {
                    operands.append(right)
                    left = SyntaxNode(syntax: .logical(op, operands), offset: left.offset)
                } else {
                    left = SyntaxNode(syntax: .logical(op, [left, right]), offset: left.offset)
                }
            } else {
                try deepen()
                left = SyntaxNode(syntax: .binary(op, left, right), offset: offset)
            }
        }
        return left
    }

    /// Counts one more level of nesting for a node built in a loop (a chain of operators or of
    /// member accesses); the caller restores `depth` when the chain ends.
    private mutating func deepen() throws(ExpressionError) {
        depth += 1
        if depth > Self.maxNesting {
            throw ExpressionError(
                offset: current.offset, reason: "expression nested deeper than \(Self.maxNesting) levels")
        }
    }

    private mutating func unary() throws(ExpressionError) -> SyntaxNode {
        let offset = current.offset
        if isSymbol("!") {
            advance()
            let operand = try nested { parser throws(ExpressionError) in try parser.unary() }
            return SyntaxNode(syntax: .not(operand), offset: offset)
        }
        if isSymbol("-") {
            advance()
            let operand = try nested { parser throws(ExpressionError) in try parser.unary() }
            return SyntaxNode(syntax: .negate(operand), offset: offset)
        }
        return try postfix()
    }

    private mutating func postfix() throws(ExpressionError) -> SyntaxNode {
        var node = try primary()
        let outerDepth = depth
        defer { depth = outerDepth }
        while true {
            try deepen()
            if isSymbol(".") {
                advance()
                guard case .identifier(let name) = current.kind else {
                    throw ExpressionError(
                        offset: current.offset, reason: "expected a member name after '.', found \(current.spelling)")
                }
                node = SyntaxNode(syntax: .member(node, name: name), offset: current.offset)
                advance()
            } else if isSymbol("[") {
                let offset = current.offset
                advance()
                let key = try expression()
                try expect("]", "to close '['")
                node = SyntaxNode(syntax: .index(node, key: key), offset: offset)
            } else if isSymbol("(") {
                let offset = node.offset
                advance()
                let arguments = try list(closing: ")")
                node = SyntaxNode(syntax: .call(node, arguments: arguments), offset: offset)
            } else {
                return node
            }
        }
    }

    /// Comma-separated expressions up to `closing` (the opening bracket already read).
    private mutating func list(closing: String) throws(ExpressionError) -> [SyntaxNode] {
        var elements: [SyntaxNode] = []
        if isSymbol(closing) {
            advance()
            return elements
        }
        while true {
            elements.append(try expression())
            if isSymbol(",") {
                advance()
            } else {
                try expect(closing, "after a list element")
                return elements
            }
        }
    }

    private mutating func primary() throws(ExpressionError) -> SyntaxNode {
        let token = current
        switch token.kind {
        case .number(let value):
            advance()
            return SyntaxNode(syntax: .number(value), offset: token.offset)
        case .string(let value):
            advance()
            return SyntaxNode(syntax: .string(value), offset: token.offset)
        case .regex(let pattern, let flags):
            advance()
            return SyntaxNode(syntax: .regex(pattern: pattern, flags: flags), offset: token.offset)
        case .identifier("true"):
            advance()
            return SyntaxNode(syntax: .boolean(true), offset: token.offset)
        case .identifier("false"):
            advance()
            return SyntaxNode(syntax: .boolean(false), offset: token.offset)
        case .identifier("null"):
            advance()
            return SyntaxNode(syntax: .null, offset: token.offset)
        case .identifier(let name):
            advance()
            return SyntaxNode(syntax: .identifier(name), offset: token.offset)
        case .symbol("("):
            advance()
            let inner = try expression()
            try expect(")", "to close '('")
            return inner
        case .symbol("["):
            advance()
            let elements = try nested { parser throws(ExpressionError) in try parser.list(closing: "]") }
            return SyntaxNode(syntax: .array(elements), offset: token.offset)
        case .symbol, .end:
            throw ExpressionError(offset: token.offset, reason: "unexpected \(token.spelling)")
        }
    }
}
