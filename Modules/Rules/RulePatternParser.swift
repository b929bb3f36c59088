/// The syntax tree of a pattern.
indirect enum PatternNode {
    case consume(ScalarMatcher)
    case sequence([PatternNode])
    case alternatives([PatternNode])
    case repetition(PatternNode, min: Int, max: Int?)
}

/// Parses a pattern of the subset ``RulePattern`` accepts.
struct RulePatternParser {
    struct Result {
        var node: PatternNode
        var anchoredAtStart: Bool
        var anchoredAtEnd: Bool
    }

    /// Deepest group nesting accepted, so that hostile input cannot exhaust the stack.
    static let maxNesting = 64

    private let scalars: [Unicode.Scalar]
    private var position = 0
    private var end: Int
    private var depth = 0

    init(_ pattern: String) {
        scalars = Array(pattern.unicodeScalars)
        end = scalars.count
    }

    mutating func parse() throws(RulePatternError) -> Result {
        let anchoredAtStart = scalars.first == "^"
        if anchoredAtStart { position = 1 }
        let anchoredAtEnd = end > position && scalars[end - 1] == "$" && !isEscaped(end - 1)
        if anchoredAtEnd { end -= 1 }
        let node = try alternatives()
        if position < end {
            throw RulePatternError(offset: position, reason: "unmatched ')'")
        }
        return Result(node: node, anchoredAtStart: anchoredAtStart, anchoredAtEnd: anchoredAtEnd)
    }

    /// Whether the scalar at `index` follows an odd number of backslashes.
    private func isEscaped(_ index: Int) -> Bool {
        var backslashes = 0
        var cursor = index - 1
        while cursor >= 0, scalars[cursor] == "\\" {
            backslashes += 1
            cursor -= 1
        }
        return backslashes % 2 == 1
    }

    private func peek(_ distance: Int = 0) -> Unicode.Scalar? {
        position + distance < end ? scalars[position + distance] : nil
    }

    private mutating func alternatives() throws(RulePatternError) -> PatternNode {
        var branches = [try sequence()]
        while peek() == "|" {
            position += 1
            branches.append(try sequence())
        }
        return branches.count == 1 ? branches[0] : .alternatives(branches)
    }

    private mutating func sequence() throws(RulePatternError) -> PatternNode {
        let start = position
        var items: [PatternNode] = []
        while let next = peek(), next != "|", next != ")" {
            items.append(try quantified())
        }
        if items.isEmpty {
            throw RulePatternError(
                offset: start, reason: "empty alternative: each side of '|' and each group needs a pattern")
        }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    private mutating func quantified() throws(RulePatternError) -> PatternNode {
        let atomNode = try atom()
        guard let (min, max) = try quantifier() else { return atomNode }
        if let following = peek(),
            following == "*" || following == "+" || following == "?" || bracedQuantifierLength() != nil
        {
            throw RulePatternError(
                offset: position, reason: "'\(following)' has nothing to repeat (quantifiers cannot follow each other)")
        }
        return .repetition(atomNode, min: min, max: max)
    }

    /// The quantifier at the position, if any, consumed.
    private mutating func quantifier() throws(RulePatternError) -> (Int, Int?)? {
        switch peek() {
        case "*":
            position += 1
            return (0, nil)
        case "+":
            position += 1
            return (1, nil)
        case "?":
            position += 1
            return (0, 1)
        case "{":
            guard let length = bracedQuantifierLength() else { return nil }
            let start = position
            let body = String(String.UnicodeScalarView(scalars[(position + 1)..<(position + length - 1)]))
            position += length
            let parts = body.split(separator: ",", omittingEmptySubsequences: false)
            guard let min = Int(parts[0]) else {
                throw RulePatternError(offset: start, reason: "invalid repetition count")
            }
            let max: Int? = parts.count == 1 ? min : (parts[1].isEmpty ? nil : Int(parts[1]))
            if parts.count == 2, !parts[1].isEmpty, max == nil {
                throw RulePatternError(offset: start, reason: "invalid repetition count")
            }
            if let max, max < min {
                throw RulePatternError(offset: start, reason: "repetition {\(body)} has its maximum below its minimum")
            }
            if min > RulePattern.maxRepetition || (max ?? 0) > RulePattern.maxRepetition {
                throw RulePatternError(
                    offset: start, reason: "repetition counts above \(RulePattern.maxRepetition) are not supported")
            }
            return (min, max)
        default:
            return nil
        }
    }

    /// The length of a `{n}`, `{n,}` or `{n,m}` quantifier at the position, `nil` when the `{`
    /// there does not start one (and then it is a literal `{`).
    private func bracedQuantifierLength() -> Int? {
        guard peek() == "{" else { return nil }
        var distance = 1
        var digits = 0
        while let next = peek(distance), next.isASCIIDigit {
            digits += 1
            distance += 1
        }
        guard digits > 0 else { return nil }
        if peek(distance) == "," {
            distance += 1
            while let next = peek(distance), next.isASCIIDigit { distance += 1 }
        }
        return peek(distance) == "}" ? distance + 1 : nil
    }

    private mutating func atom() throws(RulePatternError) -> PatternNode {
        let start = position
        guard let scalar = peek() else {
            throw RulePatternError(offset: start, reason: "unexpected end of the pattern")
        }
        switch scalar {
        case "(":
            position += 1
            if peek() == "?" {
                throw RulePatternError(offset: position, reason: "(?...) groups are not supported in rules")
            }
            depth += 1
            defer { depth -= 1 }
            if depth > Self.maxNesting {
                throw RulePatternError(offset: start, reason: "groups nested deeper than \(Self.maxNesting) levels")
            }
            let inner = try alternatives()
            guard peek() == ")" else { throw RulePatternError(offset: start, reason: "unterminated group") }
            position += 1
            return inner
        case "[":
            return .consume(try set())
        case ".":
            position += 1
            return .consume(.any)
        case "\\":
            return .consume(try escape(inSet: false).matcher)
        case "^":
            throw RulePatternError(offset: start, reason: "'^' is only allowed as the first character of the pattern")
        case "$":
            throw RulePatternError(offset: start, reason: "'$' is only allowed as the last character of the pattern")
        case "*", "+", "?":
            throw RulePatternError(offset: start, reason: "'\(scalar)' has nothing to repeat")
        case "{" where bracedQuantifierLength() != nil:
            throw RulePatternError(offset: start, reason: "'{' has nothing to repeat")
        default:
            position += 1
            return .consume(.scalar(scalar))
        }
    }

    /// An escape: a class (`\d`) or the escaped scalar itself, as Firebase documents `\`.
    private mutating func escape(inSet: Bool) throws(RulePatternError) -> PatternSetItem {
        let start = position
        position += 1
        guard let escaped = peek() else {
            throw RulePatternError(offset: start, reason: "'\\' at the end of the pattern escapes nothing")
        }
        position += 1
        switch escaped {
        case "d": return .characterClass(.digit, negated: false)
        case "D": return .characterClass(.digit, negated: true)
        case "w": return .characterClass(.word, negated: false)
        case "W": return .characterClass(.word, negated: true)
        case "s": return .characterClass(.space, negated: false)
        case "S": return .characterClass(.space, negated: true)
        default: return .scalar(escaped)
        }
    }

    private mutating func set() throws(RulePatternError) -> ScalarMatcher {
        let start = position
        position += 1
        let negated = peek() == "^"
        if negated { position += 1 }
        var items: [PatternSetItem] = []
        while true {
            guard let next = peek() else { throw RulePatternError(offset: start, reason: "unterminated '['") }
            if next == "]" {
                if items.isEmpty { throw RulePatternError(offset: start, reason: "empty character set") }
                position += 1
                return .set(items, negated: negated)
            }
            let itemStart = position
            let item = try setMember()
            if case .scalar(let low) = item, peek() == "-", let after = peek(1), after != "]" {
                position += 1
                guard case .scalar(let high) = try setMember() else {
                    throw RulePatternError(offset: itemStart, reason: "a range cannot end with a class such as \\d")
                }
                guard low <= high else {
                    throw RulePatternError(offset: itemStart, reason: "range \(low)-\(high) is out of order")
                }
                items.append(.range(low, high))
            } else {
                items.append(item)
            }
        }
    }

    private mutating func setMember() throws(RulePatternError) -> PatternSetItem {
        guard let scalar = peek() else { throw RulePatternError(offset: position, reason: "unterminated '['") }
        if scalar == "\\" { return try escape(inSet: true) }
        position += 1
        return .scalar(scalar)
    }
}

extension PatternSetItem {
    /// The item as a matcher of its own (an escape outside a set).
    fileprivate var matcher: ScalarMatcher {
        switch self {
        case .scalar(let scalar): .scalar(scalar)
        case .range(let low, let high): .set([.range(low, high)], negated: false)
        case .characterClass(let kind, let negated): .characterClass(kind, negated: negated)
        }
    }
}

/// Emits the program of a pattern (Thompson's construction).
struct RulePatternCompiler {
    var program: [PatternInstruction] = []

    mutating func emit(_ node: PatternNode) throws(RulePatternError) {
        guard program.count <= RulePattern.maxProgramSize else {
            throw RulePatternError(offset: 0, reason: "the pattern is too large")
        }
        switch node {
        case .consume(let matcher):
            program.append(.consume(matcher))
        case .sequence(let items):
            for item in items { try emit(item) }
        case .alternatives(let branches):
            var jumpsToEnd: [Int] = []
            for (index, branch) in branches.enumerated() {
                if index == branches.count - 1 {
                    try emit(branch)
                } else {
                    let split = program.count
                    program.append(.split(split + 1, -1))
                    try emit(branch)
                    jumpsToEnd.append(program.count)
                    program.append(.jump(-1))
                    program[split] = .split(split + 1, program.count)
                }
            }
            for jump in jumpsToEnd { program[jump] = .jump(program.count) }
        case .repetition(let item, let min, let max):
            for _ in 0..<min { try emit(item) }
            if let max {
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    program.append(.split(program.count + 1, -1))
                    try emit(item)
                }
                for split in splits { program[split] = .split(split + 1, program.count) }
            } else {
                let split = program.count
                program.append(.split(split + 1, -1))
                try emit(item)
                program.append(.jump(split))
                program[split] = .split(split + 1, program.count)
            }
        }
    }
}
