import Rules
import Testing
import Tree

/// The regular expressions of `matches()`: the subset Firebase documents, refused beyond it.
struct RulePatternTests {
    /// Whether `string` matches the regular expression literal `literal` (such as `/^a+$/i`).
    private func matches(_ literal: String, _ string: String) throws -> Bool {
        try holds("auth.s.matches(\(literal))", auth: ["s": .string(string)])
    }

    @Test(arguments: [
        ("/bar/", "foobar", true), ("/^bar/", "foobar", false), ("/^foo/", "foobar", true),
        ("/foo$/", "foobar", false), ("/bar$/", "foobar", true), ("/^foobar$/", "foobar", true),
        ("/^a*$/", "", true), ("/^a*$/", "aaa", true), ("/^a*$/", "b", false),
        ("/^a+$/", "", false), ("/^a+$/", "aaa", true), ("/^a?$/", "aa", false), ("/^a?$/", "a", true),
        ("/^........$/", "Firebase", true), ("/^(ab)*$/", "abab", true), ("/^(ab)*$/", "aba", false),
        ("/a|bc/", "ac", true), ("/^(a|bc)$/", "bc", true), ("/^(a|bc)$/", "b", false),
        ("/^[ABCDEF]+$/", "FACE", true), ("/^[ABCDEF]+$/", "FACT", false), ("/^[0-9A-F]+$/", "BEEF42", true),
        ("/^[^0-9]+$/", "abc", true), ("/^[^0-9]+$/", "ab1", false), ("/^\\d{3}$/", "123", true),
        ("/^\\d{3}$/", "1234", false), ("/^\\d{2,}$/", "1", false), ("/^\\d{2,}$/", "12345", true),
        ("/^\\d{2,3}$/", "1234", false), ("/^\\w+\\s\\W$/", "ab_9 !", true), ("/^\\S\\D$/", "xy", true),
        ("/^\\S\\D$/", "x1", false), ("/^[\\d-]+$/", "1-2", true), ("/^yes$/i", "YeS", true),
        ("/^[a-z]+$/i", "MiXeD", true), ("/^[^a]$/i", "A", false), ("/^\\.$/", ".", true), ("/^\\.$/", "x", false),
        ("/^.$/", "\n", false), ("/^a\\/b$/", "a/b", true), ("/^[/]$/", "/", true), ("/\\{foo}/", "{foo}", true),
        ("/^a{x}$/", "a{x}", true), ("/^\\^\\$$/", "^$", true), ("/^é+$/", "ééé", true),
        ("/^(19|20)[0-9][0-9][-\\/. ](0[1-9]|1[012])[-\\/. ](0[1-9]|[12][0-9]|3[01])$/", "2024-02-29", true),
        ("/^(19|20)[0-9][0-9][-\\/. ](0[1-9]|1[012])[-\\/. ](0[1-9]|[12][0-9]|3[01])$/", "2024-13-01", false),
        ("/^[A-Z0-9._%+-]+@[A-Z0-9.-]+\\.[A-Z]{2,4}$/i", "ada@example.com", true),
        ("/^[A-Z0-9._%+-]+@[A-Z0-9.-]+\\.[A-Z]{2,4}$/i", "ada@example", false),
    ])
    func matching(_ literal: String, _ string: String, _ expected: Bool) throws {
        #expect(try matches(literal, string) == expected, "\(literal) on \(string)")
    }

    @Test(arguments: [
        "/(^a)/", "/a^/", "/a$b/", "/(a$)/", "/a|/", "/|a/", "/()/", "/(a|)/", "/*a/", "/a**/", "/a+?/",
        "/a{2}{3}/", "/{2}/", "/(a/", "/a)/", "/[a/", "/[]/", "/[z-a]/", "/(?:a)/", "/a\\/",
        "/a{3,2}/", "/a{1001}/", "/a/g", "/a/m", "/a/ii", "/a/x",
    ])
    func patternsOutsideTheSubsetAreRefused(_ literal: String) {
        #expect(ruleError("auth.s.matches(\(literal))") != nil, "\(literal) should be refused")
    }

    @Test func matchingTakesLinearTimeEvenForPathologicalPatterns() throws {
        // A backtracking engine needs 2^n steps here; the lock-step automaton needs n·m.
        let input = String(repeating: "a", count: 5_000)
        #expect(try !matches("/^(a*)*b$/", input))
        #expect(try !matches("/^(a|a)+b$/", input))
        #expect(try matches("/^(a|aa)+$/", input))
    }

    @Test func refusalPointsIntoThePattern() throws {
        // The column of the ')' in `/a)/`, inside the rule string.
        let error = ruleError("auth.s.matches(/a)/)")
        #expect(error?.reason == "/.read: unmatched ')'")
        let text = JSONValue.object(["rules": [".read": "auth.s.matches(/a)/)"]]).serialized()
        let prefix = try #require(text.split(separator: "auth.s", maxSplits: 1).first)
        #expect(error?.column == prefix.count + 1 + "auth.s.matches(/a".count)
    }

    @Test func anUnsupportedFlagIsPointedAt() throws {
        let rule = "auth.s.matches(/a/ig)"
        let text = JSONValue.object(["rules": [".read": .string(rule)]]).serialized()
        let error = try #require(ruleError(rule))
        let prefix = try #require(text.split(separator: "auth.s", maxSplits: 1).first)
        #expect(error.reason == "/.read: 'g' is not a supported flag of rules (only i is)")
        #expect(error.column == prefix.count + 1 + "auth.s.matches(/a/i".count)
    }
}
