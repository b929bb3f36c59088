/// A token of a rule expression.
struct ExpressionToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        case number(Double)
        case string(String)
        /// A regular expression literal `/pattern/flags`, pattern and flags as written.
        case regex(pattern: String, flags: String)
        /// An operator or punctuation mark: `(` `)` `[` `]` `,` `.` `?` `:` `!` `+` `-` `*` `/` `%`
        /// `<` `<=` `>` `>=` `==` `===` `!=` `!==` `&&` `||`.
        case symbol(String)
        case end
    }

    var kind: Kind
    /// Offset of the token's first scalar in the expression.
    var offset: Int

    /// The token as it reads in messages.
    var spelling: String {
        switch kind {
        case .identifier(let name): "'\(name)'"
        case .number(let value): "number \(RuleValue.format(number: value))"
        case .string: "a string"
        case .regex: "a regular expression"
        case .symbol(let symbol): "'\(symbol)'"
        case .end: "end of the expression"
        }
    }
}
