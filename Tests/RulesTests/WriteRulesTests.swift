import Rules
import Testing
import Tree

/// `.write` and `.validate` rules: sets, deletes and multi-path updates.
struct WriteRulesTests {
    let ada = AuthContext(uid: "ada", provider: "password")

    private func canSet(
        _ rules: JSONValue, _ path: Path, _ value: JSONValue, data: JSONValue = nil, auth: AuthContext? = nil
    ) throws -> RuleDecision {
        try rulesDocument(rules).canSet(
            path, to: Node(json: value, at: path), auth: auth, root: tree(data), now: testNow)
    }

    private func canUpdate(
        _ rules: JSONValue, _ path: Path, _ children: [(Path, JSONValue)], data: JSONValue = nil,
        auth: AuthContext? = nil
    ) throws -> RuleDecision {
        var nodes: [(Path, Node)] = []
        for (relative, value) in children { nodes.append((relative, try Node(json: value))) }
        return try rulesDocument(rules).canUpdate(path, children: nodes, auth: auth, root: tree(data), now: testNow)
    }

    @Test func aWriteGrantAboveCannotBeTakenBackBelow() throws {
        let rules: JSONValue = ["users": ["$uid": [".write": "auth.uid === $uid", "locked": [".write": false]]]]
        #expect(try canSet(rules, "users/ada/locked", true, auth: ada).isAllowed)
        #expect(try !canSet(rules, "users/bob/locked", true, auth: ada).isAllowed)
        // A grant below the written location does not count.
        #expect(try !canSet(rules, "users", ["ada": ["x": 1]], auth: ada).isAllowed)
    }

    @Test func writeRulesSeeDataNewDataAndRoot() throws {
        let rules: JSONValue = [
            "counters": [
                "$name": [
                    ".write": .string(
                        "newData.val() === data.val() + 1 && root.child('open').val() === true"
                            + " && newData.parent().child('other').exists()")
                ]
            ]
        ]
        let data: JSONValue = ["open": true, "counters": ["hits": 4, "other": 0]]
        #expect(try canSet(rules, "counters/hits", 5, data: data).isAllowed)
        #expect(try !canSet(rules, "counters/hits", 6, data: data).isAllowed)
    }

    @Test func validateAppliesToTheWrittenValueAndItsChildren() throws {
        let rules: JSONValue = [
            ".write": true,
            "users": [
                "$uid": [
                    ".validate": "newData.hasChildren(['name'])",
                    "name": [".validate": "newData.isString() && newData.val().length < 20"],
                    "age": [".validate": "newData.isNumber()"],
                    "$other": [".validate": false],
                ]
            ],
        ]
        #expect(try canSet(rules, "users/ada", ["name": "Ada", "age": 36]).isAllowed)
        #expect(try !canSet(rules, "users/ada", ["name": "Ada", "age": "old"]).isAllowed)
        #expect(try !canSet(rules, "users/ada", ["name": "Ada", "nickname": "A"]).isAllowed)
        #expect(try !canSet(rules, "users/ada", ["age": 36]).isAllowed)
        let decision = try canSet(rules, "users", ["ada": ["name": .string(String(repeating: "a", count: 30))]])
        let failure = RuleFailure(
            rule: RuleReference(
                kind: .validate, rulePath: "/users/$uid/name", path: "users/ada/name",
                expression: "newData.isString() && newData.val().length < 20", readsData: true))
        #expect(decision == RuleDecision.denied(.invalidData(failure)))
    }

    @Test func validateDoesNotCascade() throws {
        let rules: JSONValue = [".write": true, "a": [".validate": "newData.hasChildren()"]]
        // `/a` has children after the write; the rule is not applied to `/a/b`, a number.
        #expect(try canSet(rules, "a/b", 1).isAllowed)
        #expect(try canSet(rules, "a", ["b": ["c": 1]]).isAllowed)
        #expect(try !canSet(rules, "a", 1).isAllowed)
    }

    @Test func validateIsNotAppliedToDeletes() throws {
        let rules: JSONValue = [".write": true, "a": [".validate": false, "b": [".validate": false]]]
        #expect(try canSet(rules, "a", nil, data: ["a": ["b": 1]]).isAllowed)
        #expect(try !canSet(rules, "a", 1).isAllowed)
    }

    @Test func locationsAboveTheWriteAreValidatedWithTheirNewData() throws {
        // Firebase's widget example: writing a child must leave the parent valid.
        let rules: JSONValue = [
            ".write": true,
            "widget": [
                ".validate": "newData.hasChildren(['color', 'size'])",
                "size": [".validate": "newData.isNumber() && newData.val() >= 0 && newData.val() <= 99"],
            ],
        ]
        #expect(try !canSet(rules, "widget/size", 99).isAllowed)
        #expect(try canSet(rules, "widget/size", 99, data: ["widget": ["color": "red", "size": 1]]).isAllowed)
        #expect(try !canSet(rules, "widget/size", 100, data: ["widget": ["color": "red", "size": 1]]).isAllowed)
        // Deleting one required child leaves the widget invalid; deleting the widget does not.
        #expect(try !canSet(rules, "widget/size", nil, data: ["widget": ["color": "red", "size": 1]]).isAllowed)
        #expect(try canSet(rules, "widget", nil, data: ["widget": ["color": "red", "size": 1]]).isAllowed)
    }

    @Test func validationCapturesWildcardsInsideTheWrittenValue() throws {
        let rules: JSONValue = [
            ".write": true,
            "rooms": ["$room": ["members": ["$uid": [".validate": "newData.val() === $room + ':' + $uid"]]]],
        ]
        #expect(try canSet(rules, "rooms", ["r1": ["members": ["ada": "r1:ada", "bob": "r1:bob"]]]).isAllowed)
        #expect(try !canSet(rules, "rooms", ["r1": ["members": ["ada": "r1:ada", "bob": "r2:bob"]]]).isAllowed)
    }

    @Test func aMultiPathUpdateIsDeniedIfOnePartIs() throws {
        let rules: JSONValue = [
            "users": ["$uid": [".write": "auth.uid === $uid"]],
            "scores": ["$uid": [".write": "auth.uid === $uid", ".validate": "newData.isNumber()"]],
        ]
        #expect(try canUpdate(rules, .root, [("users/ada/name", "Ada"), ("scores/ada", 10)], auth: ada).isAllowed)
        let other = try canUpdate(rules, .root, [("users/ada/name", "Ada"), ("scores/bob", 10)], auth: ada)
        #expect(
            other.denial
                == .notGranted(
                    .write, path: "scores/bob",
                    tried: [
                        RuleFailure(
                            rule: RuleReference(
                                kind: .write, rulePath: "/scores/$uid", path: "scores/bob",
                                expression: "auth.uid === $uid"))
                    ]))
        let invalid = try canUpdate(rules, .root, [("users/ada/name", "Ada"), ("scores/ada", "ten")], auth: ada)
        #expect(!invalid.isAllowed)
        if case .invalidData(let failure)? = invalid.denial {
            #expect(failure.rule.path == "scores/ada")
        } else {
            Issue.record("expected a validation failure, got \(invalid)")
        }
    }

    @Test func anUpdateIsValidatedWithEveryPartApplied() throws {
        let rules: JSONValue = [".write": true, "pair": [".validate": "newData.hasChildren(['x', 'y'])"]]
        #expect(try canUpdate(rules, "pair", [("x", 1), ("y", 2)]).isAllowed)
        #expect(try !canUpdate(rules, "pair", [("x", 1)]).isAllowed)
        #expect(try canUpdate(rules, "pair", [("x", 1)], data: ["pair": ["y": 0]]).isAllowed)
    }

    @Test func anEmptyUpdateWritesNothing() throws {
        #expect(try canUpdate([:], "a", []) == .allowed(nil))
    }

    @Test func writesUseTheWriteRuleNotTheReadRule() throws {
        let rules: JSONValue = [".read": true, "a": [".validate": true]]
        #expect(try canSet(rules, "a", 1).denial == .notGranted(.write, path: "a", tried: []))
    }

    @Test func serverTimestampsResolvedWithTheSameNow() throws {
        let rules = try rulesDocument(["posts": ["$id": [".write": true, "at": [".validate": "newData.val() == now"]]]])
        let value = try Node(
            json: ["at": ["\(ServerValue.key)": "timestamp"]], at: "posts/p1",
            serverValues: ServerValueContext(now: Double(testNow)))
        #expect(rules.canSet("posts/p1", to: value, auth: nil, root: .empty, now: testNow).isAllowed)
        #expect(!rules.canSet("posts/p1", to: value, auth: nil, root: .empty, now: testNow + 1).isAllowed)
    }

    @Test func priorityWrites() throws {
        let rules: JSONValue = ["items": ["$id": [".write": "newData.getPriority() != null"]]]
        let decision = try rulesDocument(rules).canSet(
            "items/a", to: Node(.string("x"), priority: .number(1)), auth: nil, root: .empty, now: testNow)
        #expect(decision.isAllowed)
        #expect(try !canSet(rules, "items/a", "x").isAllowed)
    }
}
