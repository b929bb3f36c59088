import Rules
import Testing
import Tree

/// Reading rules documents: comments, structure, and errors that say where.
struct RulesDocumentParsingTests {
    @Test func commentsAreAllowed() throws {
        let rules = try RulesDocument(
            parsing: """
                // Line comment before the document.
                {
                  /* A block comment
                     over lines. */
                  "rules": {
                    ".read": true, // trailing comment
                    "a": { ".write": "auth != null" /* after a value */ }
                  }
                }
                """)
        #expect(rules.canRead("x", auth: nil, root: .empty, now: testNow).isAllowed)
    }

    @Test func anExpressionErrorPointsIntoTheRuleString() {
        let text = """
            {
              // comment
              "rules": {
                /* block
                   comment */
                "users": {
                  "$uid": {
                    ".read": "auth != null && \\"x\\" == skies"
                  }
                }
              }
            }
            """
        #expect(
            parseError(text)
                == .invalidExpression(line: 8, column: 44, reason: "/users/$uid/.read: unknown variable 'skies'"))
    }

    @Test func anExpressionMaySpanLines() throws {
        let text = "{\"rules\": {\".write\": \"auth != null &&\n    nope.val()\"}}"
        #expect(parseError(text) == .invalidExpression(line: 2, column: 5, reason: "/.write: unknown variable 'nope'"))
        let valid = "{\"rules\": {\".write\": \"auth != null &&\n    newData.exists()\"}}"
        let rules = try RulesDocument(parsing: valid)
        #expect(
            rules.canSet("a", to: Node(.bool(true)), auth: AuthContext(uid: "u", provider: "p"), root: .empty, now: 0)
                .isAllowed)
    }

    @Test(arguments: [
        (
            "{\n  \"rules\": {\n    \".read\": true\n    \".write\": true\n  }\n}",
            RulesError.invalidJSON(line: 4, column: 5, reason: "expected ',' or '}' in an object")
        ),
        (
            "{\"rules\": {}} x",
            RulesError.invalidJSON(line: 1, column: 15, reason: "unexpected text after the document")
        ),
        ("{\"rules\": {}} /* x", RulesError.invalidJSON(line: 1, column: 15, reason: "unterminated /* comment")),
        ("", RulesError.invalidJSON(line: 1, column: 1, reason: "unexpected end of the document")),
        (
            "{\"rules\": {\".read\": tru}}",
            RulesError.invalidJSON(line: 1, column: 21, reason: "unexpected word (expected true)")
        ),
        (
            "{\"rules\": {\".read\": \"a\\q\"}}",
            RulesError.invalidJSON(line: 1, column: 23, reason: "invalid escape '\\q'")
        ),
        (
            "{\"rules\": {\"a\": {\"$x\": {}, \"$y\": {}}}}",
            RulesError.invalidDocument(
                line: 1, column: 28, reason: "/a has two wildcard children, $x and $y (at most one is allowed)")
        ),
        (
            "{\"rules\": {\"a\": {\".wrte\": true}}}",
            RulesError.invalidDocument(
                line: 1, column: 18, reason: "unknown rule \".wrte\" at /a (known: .read, .write, .validate, .indexOn)")
        ),
        (
            "{\"rules\": {\"a\": {\".read\": 7}}}",
            RulesError.invalidDocument(
                line: 1, column: 27,
                reason: "/a/.read must be a boolean or a string holding an expression, not a number")
        ),
        (
            "{\"rules\": {\"a\": {\".read\": true, \".read\": false}}}",
            RulesError.invalidDocument(line: 1, column: 33, reason: "duplicate member \".read\"")
        ),
        (
            "{\"rules\": {\"a#b\": {}}}",
            RulesError.invalidDocument(line: 1, column: 12, reason: "invalid child \"a#b\" at /: the key contains '#'")
        ),
        (
            "{\"rules\": {\"$u\": {\"$u\": {}}}}",
            RulesError.invalidDocument(line: 1, column: 19, reason: "$u is already a wildcard above /$u")
        ),
        (
            "{\"rules\": []}",
            RulesError.invalidDocument(line: 1, column: 11, reason: "/ must be an object of rules, not an array")
        ),
        ("{}", RulesError.invalidDocument(line: 1, column: 1, reason: "a rules document needs a \"rules\" member")),
        (
            "{\"rules\": {\".read\": \"newData.exists()\"}}",
            RulesError.invalidExpression(
                line: 1, column: 22, reason: "/.read: newData is only available in .write and .validate rules")
        ),
        (
            "{\"rules\": {\".write\": \"query.limitToFirst < 3\"}}",
            RulesError.invalidExpression(line: 1, column: 23, reason: "/.write: query is only available in .read rules")
        ),
        (
            "{\"rules\": {\".read\": \"root.hasChildren('a', 'b')\"}}",
            RulesError.invalidExpression(
                line: 1, column: 27, reason: "/.read: hasChildren() takes no argument or one non-empty array of strings"
            )
        ),
    ])
    func errorsSayWhatAndWhere(_ text: String, _ expected: RulesError) {
        #expect(parseError(text) == expected, "\(text)")
    }

    @Test func errorDescriptions() {
        let error = RulesError.invalidExpression(line: 3, column: 7, reason: "/.read: unknown variable 'x'")
        #expect(error.description == "invalid rule expression at line 3, column 7: /.read: unknown variable 'x'")
        #expect(error.line == 3 && error.column == 7 && error.reason == "/.read: unknown variable 'x'")
    }

    @Test func hostileNestingIsRefused() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(parseError("{\"rules\": {\".indexOn\": \(deep)}}")?.reason == "nested deeper than 256 levels")
    }

    @Test func indexOnFollowsNamedAndWildcardLocations() throws {
        let rules = try rulesDocument([
            "users": [".indexOn": "age", "$uid": ["posts": [".indexOn": ["date", ".value"]]], "admins": [:]]
        ])
        #expect(rules.indexOn(at: "users") == ["age"])
        #expect(rules.indexOn(at: "users/ada/posts") == ["date", ".value"])
        #expect(rules.indexOn(at: "users/admins") == [])
        #expect(rules.indexOn(at: "elsewhere") == [])
        #expect(rules.indexOn(at: .root) == [])
    }

    @Test func booleanRulesAndJSONDocuments() throws {
        let rules = try RulesDocument(json: ["rules": [".read": false, "open": [".read": true]]])
        #expect(rules.canRead("open/x", auth: nil, root: .empty, now: 0).isAllowed)
        #expect(!rules.canRead("closed", auth: nil, root: .empty, now: 0).isAllowed)
    }
}
