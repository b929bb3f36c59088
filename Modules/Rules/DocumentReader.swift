/// Reads the JSON of a rules document as Firebase accepts it: JSON plus `//` and `/* */` comments,
/// and raw line breaks and tabs inside strings (rules files often spread an expression over lines).
///
/// It works on the Unicode scalars of the text, so every offset it records is a scalar offset;
/// ``location(of:)`` turns one into a line and column, which only errors need.
struct DocumentReader {
    /// Deepest nesting of arrays and objects accepted, so that hostile input cannot exhaust the stack.
    static let maxNesting = 256

    let scalars: [Unicode.Scalar]
    private var position = 0
    private var depth = 0

    init(text: String) {
        scalars = Array(text.unicodeScalars)
    }

    /// Reads the whole text as one JSON value.
    mutating func readDocument() throws(RulesError) -> DocumentValue {
        try skipTrivia()
        let value = try readValue()
        try skipTrivia()
        guard position == scalars.count else { throw error("unexpected text after the document", at: position) }
        return value
    }

    /// The 1-based line and column of the scalar at `offset`.
    func location(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var index = 0
        let end = min(offset, scalars.count)
        while index < end {
            switch scalars[index] {
            case "\n":
                line += 1
                column = 1
            case "\r" where index + 1 < scalars.count && scalars[index + 1] == "\n":
                break
            case "\r":
                line += 1
                column = 1
            default:
                column += 1
            }
            index += 1
        }
        return (line, column)
    }

    /// The document offset of the scalar at `decodedOffset` in the value of the string literal whose
    /// opening quote is at `start`: escapes such as `\"` take more room in the document than in the
    /// value, so the two offsets differ.
    func offset(ofDecoded decodedOffset: Int, inStringAt start: Int) -> Int {
        var index = start + 1
        var decoded = 0
        while index < scalars.count, scalars[index] != "\"", decoded < decodedOffset {
            if scalars[index] == "\\" {
                let isUnicodeEscape = index + 1 < scalars.count && scalars[index + 1] == "u"
                index += isUnicodeEscape ? 6 : 2
                if isUnicodeEscape, index + 1 < scalars.count, scalars[index] == "\\", scalars[index + 1] == "u",
                    Self.isHighSurrogate(scalars, at: index - 4)
                {
                    index += 6
                }
            } else {
                index += 1
            }
            decoded += 1
        }
        return min(index, scalars.count)
    }

    private static func isHighSurrogate(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        guard index >= 0, index + 4 <= scalars.count else { return false }
        let hex = String(String.UnicodeScalarView(scalars[index..<index + 4]))
        guard let value = UInt32(hex, radix: 16) else { return false }
        return (0xD800...0xDBFF).contains(value)
    }

    // MARK: Values

    private mutating func readValue() throws(RulesError) -> DocumentValue {
        guard position < scalars.count else { throw error("unexpected end of the document", at: position) }
        let start = position
        switch scalars[position] {
        case "{":
            return DocumentValue(content: .object(try readObject()), start: start)
        case "[":
            return DocumentValue(content: .array(try readArray()), start: start)
        case "\"":
            return DocumentValue(content: .string(try readString()), start: start)
        case "t":
            try readWord("true")
            return DocumentValue(content: .bool(true), start: start)
        case "f":
            try readWord("false")
            return DocumentValue(content: .bool(false), start: start)
        case "n":
            try readWord("null")
            return DocumentValue(content: .null, start: start)
        case "-", "0"..."9":
            return DocumentValue(content: .number(try readNumber()), start: start)
        default:
            throw error("unexpected character '\(scalars[position])'", at: position)
        }
    }

    private mutating func enterNesting() throws(RulesError) {
        depth += 1
        if depth > Self.maxNesting {
            throw error("nested deeper than \(Self.maxNesting) levels", at: position)
        }
    }

    private mutating func readObject() throws(RulesError) -> [DocumentMember] {
        try enterNesting()
        defer { depth -= 1 }
        position += 1
        var members: [DocumentMember] = []
        try skipTrivia()
        if position < scalars.count, scalars[position] == "}" {
            position += 1
            return members
        }
        while true {
            try skipTrivia()
            guard position < scalars.count, scalars[position] == "\"" else {
                throw error("expected a member name in double quotes", at: position)
            }
            let keyStart = position
            let key = try readString()
            try skipTrivia()
            guard position < scalars.count, scalars[position] == ":" else {
                throw error("expected ':' after the member name", at: position)
            }
            position += 1
            try skipTrivia()
            members.append(DocumentMember(key: key, keyStart: keyStart, value: try readValue()))
            try skipTrivia()
            guard position < scalars.count else { throw error("unterminated object", at: position) }
            if scalars[position] == "," {
                position += 1
            } else if scalars[position] == "}" {
                position += 1
                return members
            } else {
                throw error("expected ',' or '}' in an object", at: position)
            }
        }
    }

    private mutating func readArray() throws(RulesError) -> [DocumentValue] {
        try enterNesting()
        defer { depth -= 1 }
        position += 1
        var elements: [DocumentValue] = []
        try skipTrivia()
        if position < scalars.count, scalars[position] == "]" {
            position += 1
            return elements
        }
        while true {
            try skipTrivia()
            elements.append(try readValue())
            try skipTrivia()
            guard position < scalars.count else { throw error("unterminated array", at: position) }
            if scalars[position] == "," {
                position += 1
            } else if scalars[position] == "]" {
                position += 1
                return elements
            } else {
                throw error("expected ',' or ']' in an array", at: position)
            }
        }
    }

    private mutating func readString() throws(RulesError) -> String {
        let start = position
        position += 1
        var value = String.UnicodeScalarView()
        while true {
            guard position < scalars.count else { throw error("unterminated string", at: start) }
            let scalar = scalars[position]
            switch scalar {
            case "\"":
                position += 1
                return String(value)
            case "\\":
                value.append(try readEscape())
            case "\n", "\r", "\t":
                value.append(scalar)
                position += 1
            default:
                if scalar.value < 0x20 {
                    throw error("control character in a string", at: position)
                }
                value.append(scalar)
                position += 1
            }
        }
    }

    private mutating func readEscape() throws(RulesError) -> Unicode.Scalar {
        let start = position
        position += 1
        guard position < scalars.count else { throw error("unterminated string", at: start) }
        let escaped = scalars[position]
        position += 1
        switch escaped {
        case "\"", "\\", "/": return escaped
        case "b": return "\u{08}"
        case "f": return "\u{0C}"
        case "n": return "\n"
        case "r": return "\r"
        case "t": return "\t"
        case "u":
            let high = try readHexQuad(escapeStart: start)
            if (0xD800...0xDBFF).contains(high), position + 1 < scalars.count, scalars[position] == "\\",
                scalars[position + 1] == "u"
            {
                let lowStart = position
                position += 2
                let low = try readHexQuad(escapeStart: lowStart)
                if (0xDC00...0xDFFF).contains(low),
                    let combined = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                {
                    return combined
                }
                throw error("invalid surrogate pair", at: start)
            }
            guard let scalar = Unicode.Scalar(high) else { throw error("lone surrogate in \\u escape", at: start) }
            return scalar
        default:
            throw error("invalid escape '\\\(escaped)'", at: start)
        }
    }

    private mutating func readHexQuad(escapeStart: Int) throws(RulesError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard position < scalars.count, let digit = UInt32(String(scalars[position]), radix: 16) else {
                throw error("\\u must be followed by four hexadecimal digits", at: escapeStart)
            }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    private mutating func readWord(_ word: String) throws(RulesError) {
        let start = position
        for expected in word.unicodeScalars {
            guard position < scalars.count, scalars[position] == expected else {
                throw error("unexpected word (expected \(word))", at: start)
            }
            position += 1
        }
    }

    private mutating func readNumber() throws(RulesError) -> Double {
        let start = position
        if scalars[position] == "-" { position += 1 }
        guard position < scalars.count, scalars[position].isASCIIDigit else {
            throw error("invalid number", at: start)
        }
        if scalars[position] == "0" {
            position += 1
        } else {
            skipDigits()
        }
        if position < scalars.count, scalars[position] == "." {
            position += 1
            guard position < scalars.count, scalars[position].isASCIIDigit else {
                throw error("invalid number: digits must follow '.'", at: start)
            }
            skipDigits()
        }
        if position < scalars.count, scalars[position] == "e" || scalars[position] == "E" {
            position += 1
            if position < scalars.count, scalars[position] == "+" || scalars[position] == "-" { position += 1 }
            guard position < scalars.count, scalars[position].isASCIIDigit else {
                throw error("invalid number: digits must follow the exponent", at: start)
            }
            skipDigits()
        }
        let text = String(String.UnicodeScalarView(scalars[start..<position]))
        guard let value = Double(text), value.isFinite else { throw error("invalid number \(text)", at: start) }
        return value
    }

    private mutating func skipDigits() {
        while position < scalars.count, scalars[position].isASCIIDigit { position += 1 }
    }

    /// Skips whitespace and comments.
    private mutating func skipTrivia() throws(RulesError) {
        while position < scalars.count {
            switch scalars[position] {
            case " ", "\t", "\n", "\r":
                position += 1
            case "/" where position + 1 < scalars.count && scalars[position + 1] == "/":
                while position < scalars.count, scalars[position] != "\n" { position += 1 }
            case "/" where position + 1 < scalars.count && scalars[position + 1] == "*":
                let start = position
                position += 2
                while position + 1 < scalars.count, !(scalars[position] == "*" && scalars[position + 1] == "/") {
                    position += 1
                }
                guard position + 1 < scalars.count else { throw error("unterminated /* comment", at: start) }
                position += 2
            default:
                return
            }
        }
    }

    private func error(_ reason: String, at offset: Int) -> RulesError {
        let (line, column) = location(of: offset)
        return .invalidJSON(line: line, column: column, reason: reason)
    }
}

extension Unicode.Scalar {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
