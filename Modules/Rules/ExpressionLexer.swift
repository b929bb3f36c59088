/// Splits a rule expression into tokens.
///
/// A `/` starts a regular expression literal where a value is expected (at the start, or after an
/// operator or an opening bracket), as in JavaScript; elsewhere it divides.
struct ExpressionLexer {
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    /// Every token of the expression, ending with ``ExpressionToken/Kind/end``.
    static func tokens(of text: String) throws(ExpressionError) -> [ExpressionToken] {
        var lexer = ExpressionLexer(text)
        var tokens: [ExpressionToken] = []
        while true {
            let token = try lexer.next(after: tokens.last)
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private mutating func next(after previous: ExpressionToken?) throws(ExpressionError) -> ExpressionToken {
        while position < scalars.count, scalars[position].properties.isWhitespace { position += 1 }
        let start = position
        guard position < scalars.count else { return ExpressionToken(kind: .end, offset: start) }
        let scalar = scalars[position]
        if scalar.isIdentifierStart {
            while position < scalars.count, scalars[position].isIdentifierPart { position += 1 }
            return ExpressionToken(kind: .identifier(text(start..<position)), offset: start)
        }
        if scalar.isASCIIDigit || (scalar == "." && peek(1)?.isASCIIDigit == true) {
            return ExpressionToken(kind: .number(try number()), offset: start)
        }
        switch scalar {
        case "'", "\"":
            return ExpressionToken(kind: .string(try string(quote: scalar)), offset: start)
        case "/" where Self.valueExpected(after: previous):
            return try regex()
        case "(", ")", "[", "]", ",", ".", "?", ":", "+", "-", "*", "/", "%":
            position += 1
            return ExpressionToken(kind: .symbol(String(scalar)), offset: start)
        case "<", ">":
            position += 1
            if peek(0) == "=" { position += 1 }
            return ExpressionToken(kind: .symbol(text(start..<position)), offset: start)
        case "=", "!":
            position += 1
            if peek(0) == "=" {
                position += 1
                if peek(0) == "=" { position += 1 }
            }
            let symbol = text(start..<position)
            if symbol == "=" {
                throw ExpressionError(offset: start, reason: "'=' is not allowed: assignment is not part of rules")
            }
            return ExpressionToken(kind: .symbol(symbol), offset: start)
        case "&", "|":
            position += 1
            guard peek(0) == scalar else {
                throw ExpressionError(
                    offset: start, reason: "'\(scalar)' is not an operator of rules (use \(scalar)\(scalar))")
            }
            position += 1
            return ExpressionToken(kind: .symbol(text(start..<position)), offset: start)
        case ";":
            throw ExpressionError(offset: start, reason: "';' is not allowed: a rule is a single expression")
        default:
            throw ExpressionError(offset: start, reason: "unexpected character '\(scalar)'")
        }
    }

    /// Whether a value, not an operator, comes after `previous`: then `/` opens a regular expression.
    private static func valueExpected(after previous: ExpressionToken?) -> Bool {
        guard let previous else { return true }
        switch previous.kind {
        case .symbol(let symbol): return symbol != ")" && symbol != "]"
        case .identifier, .number, .string, .regex, .end: return false
        }
    }

    private func peek(_ distance: Int) -> Unicode.Scalar? {
        position + distance < scalars.count ? scalars[position + distance] : nil
    }

    private func text(_ range: Range<Int>) -> String {
        String(String.UnicodeScalarView(scalars[range]))
    }

    private mutating func number() throws(ExpressionError) -> Double {
        let start = position
        while position < scalars.count, scalars[position].isASCIIDigit { position += 1 }
        if peek(0) == ".", peek(1)?.isASCIIDigit == true {
            position += 1
            while position < scalars.count, scalars[position].isASCIIDigit { position += 1 }
        }
        if let marker = peek(0), marker == "e" || marker == "E" {
            var end = position + 1
            if end < scalars.count, scalars[end] == "+" || scalars[end] == "-" { end += 1 }
            if end < scalars.count, scalars[end].isASCIIDigit {
                position = end
                while position < scalars.count, scalars[position].isASCIIDigit { position += 1 }
            }
        }
        if let next = peek(0), next.isIdentifierPart {
            throw ExpressionError(offset: position, reason: "unexpected '\(next)' after a number")
        }
        guard let value = Double(text(start..<position)), value.isFinite else {
            throw ExpressionError(offset: start, reason: "invalid number \(text(start..<position))")
        }
        return value
    }

    private mutating func string(quote: Unicode.Scalar) throws(ExpressionError) -> String {
        let start = position
        position += 1
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = peek(0) else { throw ExpressionError(offset: start, reason: "unterminated string") }
            position += 1
            if scalar == quote { return String(value) }
            guard scalar == "\\" else {
                value.append(scalar)
                continue
            }
            guard let escaped = peek(0) else { throw ExpressionError(offset: start, reason: "unterminated string") }
            position += 1
            switch escaped {
            case "n": value.append("\n")
            case "t": value.append("\t")
            case "r": value.append("\r")
            case "b": value.append("\u{08}")
            case "f": value.append("\u{0C}")
            case "v": value.append("\u{0B}")
            case "0": value.append("\u{00}")
            case "u":
                value.append(try unicodeEscape(escapeStart: position - 2))
            default: value.append(escaped)
            }
        }
    }

    private mutating func unicodeEscape(escapeStart: Int) throws(ExpressionError) -> Unicode.Scalar {
        var digits = ""
        for distance in 0..<4 {
            guard let digit = peek(distance), digit.properties.isASCIIHexDigit else {
                throw ExpressionError(offset: escapeStart, reason: "\\u must be followed by four hexadecimal digits")
            }
            digits.unicodeScalars.append(digit)
        }
        position += 4
        guard let value = UInt32(digits, radix: 16), let scalar = Unicode.Scalar(value) else {
            throw ExpressionError(offset: escapeStart, reason: "\\u\(digits) is not a Unicode scalar")
        }
        return scalar
    }

    private mutating func regex() throws(ExpressionError) -> ExpressionToken {
        let start = position
        position += 1
        var inSet = false
        let patternStart = position
        while true {
            guard let scalar = peek(0), scalar != "\n" else {
                throw ExpressionError(offset: start, reason: "unterminated regular expression")
            }
            if scalar == "\\" {
                position += 2
                continue
            }
            if scalar == "[" { inSet = true }
            if scalar == "]" { inSet = false }
            if scalar == "/" && !inSet { break }
            position += 1
        }
        let pattern = text(patternStart..<min(position, scalars.count))
        position += 1
        let flagsStart = position
        while position < scalars.count, scalars[position].isIdentifierPart { position += 1 }
        if pattern.isEmpty {
            throw ExpressionError(offset: start, reason: "empty regular expression")
        }
        return ExpressionToken(kind: .regex(pattern: pattern, flags: text(flagsStart..<position)), offset: start)
    }
}

extension Unicode.Scalar {
    fileprivate var isIdentifierStart: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || self == "_" || self == "$"
    }

    fileprivate var isIdentifierPart: Bool { isIdentifierStart || isASCIIDigit }
}
