/// A regular expression of the subset Firebase rules accept, compiled once into a program that
/// matches in time linear in the length of the string (a Thompson automaton run in lock step, so
/// no pattern can make a match take exponential time).
///
/// The subset, as Firebase documents it: characters and `\`-escaped characters, `.`, the classes
/// `\d \w \s \D \W \S`, sets `[abc]`, `[a-z]`, `[^...]`, groups `( )`, alternatives `|`, and the
/// quantifiers `* + ? {n} {n,} {n,m}`; `^` only as the first character of the pattern and `$`
/// only as the last; `i` (ignore case) is the only flag. Everything else is refused.
///
/// Swift's `Regex` is not `Sendable`, and both it and `NSRegularExpression` backtrack; neither is
/// needed for a language this small.
struct RulePattern: Sendable {
    /// The literal as written: `/pattern/flags`.
    let source: String
    let program: [PatternInstruction]
    let anchoredAtStart: Bool
    let anchoredAtEnd: Bool
    let ignoresCase: Bool

    /// Largest count a `{n,m}` quantifier may give.
    static let maxRepetition = 1000
    /// Largest program a pattern may compile to.
    static let maxProgramSize = 20_000

    /// Compiles `pattern` (as written between the slashes) with `flags`.
    init(pattern: String, flags: String) throws(RulePatternError) {
        for (offset, flag) in flags.unicodeScalars.enumerated() where flag != "i" || offset > 0 {
            throw RulePatternError(
                offset: offset, reason: "'\(flag)' is not a supported flag of rules (only i is)", inFlags: true)
        }
        var parser = RulePatternParser(pattern)
        let syntax = try parser.parse()
        var compiler = RulePatternCompiler()
        try compiler.emit(syntax.node)
        compiler.program.append(.accept)
        source = "/\(pattern)/\(flags)"
        program = compiler.program
        anchoredAtStart = syntax.anchoredAtStart
        anchoredAtEnd = syntax.anchoredAtEnd
        ignoresCase = flags == "i"
    }
}

/// A pattern that is not in the subset rules accept: what is wrong and at which scalar of the
/// pattern (or of the flags).
struct RulePatternError: Error {
    var offset: Int
    var reason: String
    var inFlags = false
}

/// One step of a compiled pattern.
enum PatternInstruction: Sendable {
    /// Consume one scalar that `matcher` accepts, then go on with the next instruction.
    case consume(ScalarMatcher)
    /// Go on with both instructions.
    case split(Int, Int)
    case jump(Int)
    /// The pattern matched.
    case accept
}

/// Which scalars one position of a pattern accepts.
enum ScalarMatcher: Sendable {
    case scalar(Unicode.Scalar)
    /// `.`: anything but a line terminator.
    case any
    case characterClass(PatternClass, negated: Bool)
    case set([PatternSetItem], negated: Bool)
}

/// `\d`, `\w` and `\s` (their negations are classes with `negated` set).
enum PatternClass: Sendable {
    case digit, word, space
}

/// One member of a `[...]` set.
enum PatternSetItem: Sendable {
    case scalar(Unicode.Scalar)
    case range(Unicode.Scalar, Unicode.Scalar)
    case characterClass(PatternClass, negated: Bool)
}
