import Rules
import Testing
import Tree

/// The expression language: literals, operators and their precedence, type rules, variables.
struct ExpressionTests {
    @Test(arguments: [
        "1 + 2 * 3 == 7",
        "(1 + 2) * 3 == 9",
        "10 - 4 - 3 == 3",
        "12 / 4 / 3 == 1",
        "7 % 4 == 3",
        "-2 * 3 == -6",
        "- -2 == 2",
        "2 + 3 > 4",
        "1 < 2 == true",
        "true || false && false",
        "!(false && true || true) == false",
        "!false && true",
        "false ? false : true ? true : false",
        "1 + 1 == 2 ? 'yes' == 'yes' : false",
        "0.1 * 3 > 0.3",
        "1e3 == 1000",
        ".5 == 0.5",
    ])
    func precedenceAndArithmetic(_ expression: String) throws {
        #expect(try holds(expression), "\(expression)")
    }

    @Test(arguments: [
        "false || false && true",
        "!true || false",
        "1 + 2 * 3 == 9",
        "3 - 2 - 1 == 2",
    ])
    func expressionsThatAreFalse(_ expression: String) throws {
        #expect(try !holds(expression), "\(expression)")
    }

    @Test func plusJoinsStringsAndNumbersAsJavaScriptDoes() throws {
        #expect(try holds("'a' + 1 + 2 == 'a12'"))
        #expect(try holds("1 + 2 + 'a' == '3a'"))
        #expect(try holds("0.5 + '' == '0.5'"))
        #expect(try holds("0.000015 + '' == '0.000015'"))
        #expect(try holds("1e21 + '' == '1e+21'"))
        #expect(try holds("(1/0 + '') == 'NaN'"))
        #expect(
            try evaluationError("1 + auth.t == 2", auth: ["t": true])
                == "'+' needs numbers or strings, got number and boolean")
    }

    @Test func equalityNeverConvertsTypes() throws {
        #expect(try holds("1 == 1.0"))
        #expect(try holds("1 != '1'"))
        #expect(try holds("true !== 'true'"))
        #expect(try holds("null == null"))
        #expect(try holds("auth == null"))
        #expect(try holds("'a' === \"a\""))
        #expect(try holds("auth.a == auth.b", auth: ["a": ["x": 1], "b": ["x": 1]]))
    }

    @Test func comparisonsNeedTwoNumbersOrTwoStrings() throws {
        #expect(try holds("'apple' < 'banana'"))
        #expect(try holds("'B' < 'a'"))
        #expect(try holds("'ab' >= 'a'"))
        #expect(try holds("2 >= 2 && 2 <= 2"))
        #expect(try !holds("(0/0) == (0/0)"))
        #expect(try evaluationError("auth.n < 'b'", auth: ["n": 1]) == "'<' cannot compare number with string")
        #expect(try evaluationError("auth.missing > 1", auth: [:]) == "'>' cannot compare null with number")
    }

    @Test func anErrorFailsTheWholeRule() throws {
        #expect(try !holds("auth.x.length > 1 || true"))
        #expect(try holds("true || auth.x.length > 1"))
        #expect(try !holds("!(auth.x.length > 1)"))
        #expect(try !holds("auth.x.length > 1 ? false : true"))
        #expect(try !holds("auth.name", auth: ["name": "ada"]))
        #expect(
            try evaluationError("auth.name", auth: ["name": "ada"]) == "the rule evaluated to a string, not a boolean")
        #expect(try evaluationError("auth.n && true", auth: ["n": 1]) == "'&&' needs a boolean, got number")
    }

    @Test func authMembersAreNullWhenSignedOut() throws {
        #expect(try holds("auth.uid == null"))
        #expect(try holds("auth.token.email == null"))
        #expect(try holds("auth.uid == 'ada'", auth: ["uid": "ada"]))
        #expect(try holds("auth.token.admin === true", auth: ["token": ["admin": true]]))
        #expect(try holds("auth['token']['admin'] === true", auth: ["token": ["admin": true]]))
        let claims: JSONValue = ["firebase": ["identities": ["google.com": ["1234"]]]]
        #expect(try holds("auth.token.firebase.identities['google.com'][0] == '1234'", auth: ["token": claims]))
    }

    @Test func nowIsTheClockInMilliseconds() throws {
        #expect(try holds("now == \(testNow)"))
        #expect(try holds("now > 1600000000000"))
    }

    @Test func stringMembers() throws {
        #expect(try holds("'héllo'.length == 5"))
        #expect(try holds("'😀'.length == 2"))
        #expect(try holds("'hello'.contains('ell') && !'hello'.contains('xyz')"))
        #expect(try holds("'hello'.contains('')"))
        #expect(try holds("'hello'.beginsWith('he') && !'hello'.beginsWith('lo')"))
        #expect(try holds("'hello'.endsWith('lo') && !'hello'.endsWith('he')"))
        #expect(try holds("'a-b-c'.replace('-', '+') == 'a+b+c'"))
        #expect(try holds("'aaa'.replace('aa', 'b') == 'ba'"))
        #expect(try holds("'MiXeD'.toLowerCase() == 'mixed'"))
        #expect(try holds("'MiXeD'.toUpperCase() == 'MIXED'"))
        #expect(try holds("'user@example.com'.matches(/^[a-z]+@[a-z]+\\.com$/)"))
        #expect(try holds("'café'['contains']('é')"))
        #expect(try holds(#"'it\'s'.length == 4"#))
        #expect(try evaluationError("auth.n.contains('1')", auth: ["n": 1]) == "contains() needs a string, got number")
    }

    @Test func snapshotMethods() throws {
        let data: JSONValue = [
            "users": [
                "ada": [".priority": 3, "name": "Ada", "age": 36, "admin": true],
                "bob": ["name": "Bob"],
            ],
            "count": 7,
        ]
        let checks = [
            "root.child('users/ada/name').val() == 'Ada'",
            "root.child('users').child('ada').child('age').val() == 36",
            "root.child('users//ada/').child('age').val() == 36",
            "root.child('users/ada/name').parent().parent().child('bob/name').val() == 'Bob'",
            "root.child('users/ada').parent().parent().hasChild('count')",
            "!root.child('users/ada').parent().hasChild('count')",
            "root.hasChild('users/ada/admin') && !root.hasChild('users/cy')",
            "root.child('users').hasChildren() && !root.child('count').hasChildren()",
            "root.child('users/ada').hasChildren(['name', 'age'])",
            "!root.child('users/bob').hasChildren(['name', 'age'])",
            "root.child('users/ada').exists() && !root.child('nobody').exists()",
            "root.child('users/ada').getPriority() == 3 && root.child('users/bob').getPriority() == null",
            "root.child('count').isNumber() && !root.child('users').isNumber()",
            "root.child('users/ada/name').isString() && !root.child('count').isString()",
            "root.child('users/ada/admin').isBoolean() && !root.child('count').isBoolean()",
            "root.child('nobody').val() == null",
            "data.child('count').val() + 1 == 8",
            "root['exists']()",
            "root.child('users/ada/name').val().length == 3",
        ]
        for check in checks {
            #expect(try holds(check, data: data), "\(check)")
        }
        #expect(try evaluationError("root.parent().exists()") == "the root has no parent")
        #expect(try evaluationError("root.child(auth.uid).exists()") == "child() needs a string argument, got null")
    }

    @Test func valOfANodeWithChildrenIsAnObject() throws {
        let data: JSONValue = ["a": ["x": 1], "b": ["x": 1], "c": ["x": 2]]
        #expect(try holds("root.child('a').val() == root.child('b').val()", data: data))
        #expect(try holds("root.child('a').val() != root.child('c').val()", data: data))
    }

    @Test func typesThatCanNeverFitAreRefusedWhenTheRulesAreSet() {
        let refused = [
            "7", "'yes'", "null", "root", "root.child('a')", "1 + 2",
            "true ? 1 : false",
            "root.val() > true", "'a' < 1", "root == null", "query == null",
            "!1", "-'a'", "'a' - 1", "true + 1", "null + 'a'",
            "1 && true", "true || 'a'",
            "root.val().foo == 1", "root.exists == true", "root.foo()", "root.child() == null",
            "root.child('a', 'b').exists()", "root.child(1).exists()", "root.hasChildren('a')",
            "root.hasChildren([])", "root.hasChildren(['a', 1])",
            "'a'.contains(1)", "'a'.replace('a')", "'a'.toLowerCase('b') == 'a'", "'a'.nope()", "'a'.foo == 1",
            "auth.uid.nope()", "auth()", "now.x == 1",
            "'a'.matches('a')", "'a'.matches(/a/g)", "'a'.matches(/a/, /b/)", "/a/ == 1", "[1] == 1",
            "newData.exists()", "query.foo == 1", "$x == 'a'", "undefined == null", "window.alert()",
            "a = 1", "true; true", "2 ** 2 == 4", "1 & 1", "1 | 1", "(true", "true)", "", "'unterminated",
            "root[auth.x]()", "root['exi' + 'sts']()", "root['nope']()",
        ]
        for expression in refused {
            #expect(ruleError(expression) != nil, "\(expression) should be refused")
        }
    }

    @Test func fuzzyOperandsAreCheckedWhenEvaluated() {
        let accepted = [
            "auth.x", "auth.x > 1", "auth.x + 1 == 2", "auth.x.contains('a')", "auth.x.length == 1",
            "root.val() > 1", "root.val() + 1 > 1", "root.val().length > 1", "root.val().matches(/a/)",
            "root.getPriority() == 1", "auth.x ? true : false", "(auth.x ? 1 : null) == 1", "auth.x['contains'] == 1",
            "query.limitToFirst <= 100", "query.startAt == 'a'",
        ]
        for expression in accepted {
            #expect(ruleError(expression) == nil, "\(expression) should be accepted")
        }
    }

    @Test func longLogicalChainsStayFlat() throws {
        let chain = Array(repeating: "auth.uid != 'x'", count: 2_000).joined(separator: " && ")
        #expect(try holds(chain))
        let deep = String(repeating: "(", count: 300) + "true" + String(repeating: ")", count: 300)
        #expect(ruleError(deep)?.reason.contains("nested deeper") == true)
        let sum = Array(repeating: "1", count: 300).joined(separator: " + ") + " > 0"
        #expect(ruleError(sum)?.reason.contains("nested deeper") == true)
    }
}
