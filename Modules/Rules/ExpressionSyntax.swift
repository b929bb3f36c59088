/// A parsed rule expression, before its names are resolved and its types checked.
indirect enum ExpressionSyntax {
    case identifier(String)
    case number(Double)
    case string(String)
    case boolean(Bool)
    case null
    case regex(pattern: String, flags: String)
    case array([SyntaxNode])
    case not(SyntaxNode)
    case negate(SyntaxNode)
    case binary(BinaryOperator, SyntaxNode, SyntaxNode)
    /// A chain `a && b && c` (or `||`), kept flat so that long chains do not nest deeply.
    case logical(BinaryOperator, [SyntaxNode])
    case conditional(SyntaxNode, SyntaxNode, SyntaxNode)
    /// `object.name`
    case member(SyntaxNode, name: String)
    /// `object[key]`
    case index(SyntaxNode, key: SyntaxNode)
    case call(SyntaxNode, arguments: [SyntaxNode])
}

/// A node of a parsed expression and the offset it is reported at: its first scalar, or its
/// operator for binary and conditional expressions, or its name for members and calls.
struct SyntaxNode {
    var syntax: ExpressionSyntax
    var offset: Int
}

/// The binary operators of rules, tightest last in each group as JavaScript orders them.
enum BinaryOperator: String {
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
    case add = "+"
    case subtract = "-"
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case equal = "=="
    case strictEqual = "==="
    case notEqual = "!="
    case strictNotEqual = "!=="
    case and = "&&"
    case or = "||"

    /// Binding strength: higher binds tighter.
    var precedence: Int {
        switch self {
        case .multiply, .divide, .remainder: 6
        case .add, .subtract: 5
        case .less, .lessOrEqual, .greater, .greaterOrEqual: 4
        case .equal, .strictEqual, .notEqual, .strictNotEqual: 3
        case .and: 2
        case .or: 1
        }
    }
}
