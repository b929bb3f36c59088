import Rules
import Testing
import Tree

/// `.read` rules: cascading grants, rules that are not filters, wildcards, queries.
struct ReadRulesTests {
    let data: JSONValue = [
        "public": ["news": "hello"],
        "users": ["ada": ["name": "Ada", "email": "ada@example.com"], "bob": ["name": "Bob"]],
        "rooms": ["r1": ["owner": "ada", "members": ["ada": true, "bob": true]]],
    ]

    private func canRead(
        _ rules: JSONValue, _ path: Path, auth: AuthContext? = nil, query: RuleQuery? = nil
    ) throws -> RuleDecision {
        try rulesDocument(rules).canRead(path, auth: auth, root: tree(data), query: query, now: testNow)
    }

    @Test func aGrantAboveCannotBeTakenBackBelow() throws {
        let rules: JSONValue = ["users": [".read": true, "ada": [".read": false, "email": [".read": false]]]]
        let decision = try canRead(rules, "users/ada/email")
        #expect(decision == .allowed(RuleReference(kind: .read, rulePath: "/users", path: "users", expression: "true")))
        #expect(try canRead(rules, "users").isAllowed)
        #expect(try !canRead(rules, "/").isAllowed)
    }

    @Test func rulesAreNotFilters() throws {
        let rules: JSONValue = ["users": ["ada": [".read": true], "bob": [".read": true]]]
        #expect(try canRead(rules, "users/ada").isAllowed)
        #expect(try canRead(rules, "users/ada/name").isAllowed)
        let decision = try canRead(rules, "users")
        #expect(decision == .denied(.notGranted(.read, path: "users", tried: [])))
        #expect(try !canRead(rules, "/").isAllowed)
    }

    @Test func aDenialListsEveryRuleTried() throws {
        let rules: JSONValue = [".read": "auth != null", "users": ["$uid": [".read": "auth.uid === $uid"]]]
        let tried = [
            RuleFailure(rule: RuleReference(kind: .read, rulePath: "/", path: .root, expression: "auth != null")),
            RuleFailure(
                rule: RuleReference(
                    kind: .read, rulePath: "/users/$uid", path: "users/ada", expression: "auth.uid === $uid")),
        ]
        let decision = try canRead(rules, "users/ada/name")
        #expect(decision == .denied(.notGranted(.read, path: "users/ada/name", tried: tried)))
        #expect(
            decision.description
                == "denied: no .read rule at or above /users/ada/name granted access (/.read at /: auth != null was"
                + " false; /users/$uid/.read at /users/ada: auth.uid === $uid was false)")
        let bob = try canRead(rules, "users/ada/name", auth: AuthContext(uid: "bob", provider: "password"))
        #expect(bob.description == "allowed by /.read at /: auth != null")
    }

    @Test func wildcardsCaptureTheKeyAndNamedChildrenTakePrecedence() throws {
        let rules: JSONValue = [
            "rooms": [
                "$room": [
                    ".read": "root.child('rooms/' + $room + '/members/' + auth.uid).val() === true",
                    "members": ["$member": [".read": "$member === auth.uid && $room == 'r1'"]],
                ],
                "lobby": [".read": true],
            ]
        ]
        let ada = AuthContext(uid: "ada", provider: "password")
        let cy = AuthContext(uid: "cy", provider: "password")
        #expect(try canRead(rules, "rooms/r1", auth: ada).isAllowed)
        #expect(try !canRead(rules, "rooms/r1", auth: cy).isAllowed)
        #expect(try canRead(rules, "rooms/r1/members/cy", auth: cy).isAllowed)
        #expect(try !canRead(rules, "rooms/r2/members/cy", auth: cy).isAllowed)
        #expect(try canRead(rules, "rooms/lobby", auth: nil).isAllowed)
        // `lobby` is named, so the `$room` rule (which fails when signed out) does not apply to it.
        #expect(try canRead(rules, "rooms/lobby/anything", auth: nil).isAllowed)
    }

    @Test func dataIsTheLocationOfTheRule() throws {
        let rules: JSONValue = [
            "users": ["$uid": [".read": "data.child('name').val() == 'Ada' && data.parent().hasChild('bob')"]]
        ]
        #expect(try canRead(rules, "users/ada").isAllowed)
        #expect(try !canRead(rules, "users/bob").isAllowed)
    }

    @Test func queryRulesSeeTheQuery() throws {
        let rules: JSONValue = [
            "rooms": [
                ".indexOn": ["owner"],
                ".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid && query.limitToFirst <= 100",
            ]
        ]
        let ada = AuthContext(uid: "ada", provider: "password")
        let own = RuleQuery(orderBy: .child("owner"), equalTo: RuleQuery.Bound(Node(.string("ada"))), limitToFirst: 50)
        #expect(try canRead(rules, "rooms", auth: ada, query: own).isAllowed)
        var tooMany = own
        tooMany.limitToFirst = 500
        #expect(try !canRead(rules, "rooms", auth: ada, query: tooMany).isAllowed)
        var unlimited = own
        unlimited.limitToFirst = nil
        let decision = try canRead(rules, "rooms", auth: ada, query: unlimited)
        #expect(decision.denial?.description.contains("'<=' cannot compare null with number") == true)
        var others = own
        others.equalTo = RuleQuery.Bound(Node(.string("bob")))
        #expect(try !canRead(rules, "rooms", auth: ada, query: others).isAllowed)
        #expect(try !canRead(rules, "rooms", auth: ada, query: nil).isAllowed)
    }

    @Test func queryMembersWithoutAQuery() throws {
        #expect(try holds("query.orderByKey == false && query.orderByValue == false && query.orderByPriority == false"))
        #expect(try holds("query.orderByChild == null && query.startAt == null && query.endAt == null"))
        #expect(try holds("query.equalTo == null && query.limitToFirst == null && query.limitToLast == null"))
    }

    @Test func queryMembersWithAQuery() throws {
        let query = RuleQuery(
            orderBy: .key, startAt: RuleQuery.Bound(Node(.string("a"))), endAt: RuleQuery.Bound(Node(.string("m"))),
            limitToLast: 10)
        let expression =
            "query.orderByKey && !query.orderByValue && query.startAt == 'a' && query.endAt == 'm'"
            + " && query.limitToLast == 10"
        #expect(try readDecision(expression, query: query).isAllowed)
        let byValue = RuleQuery(orderBy: .value, equalTo: RuleQuery.Bound(Node(.bool(true))))
        #expect(try readDecision("query.orderByValue && query.equalTo == true", query: byValue).isAllowed)
        let byPriority = RuleQuery(orderBy: .priority, startAt: RuleQuery.Bound(.empty))
        #expect(try readDecision("query.orderByPriority && query.startAt == null", query: byPriority).isAllowed)
    }

    @Test func priorityPathsAreGovernedByTheirParent() throws {
        let rules: JSONValue = ["users": ["$uid": [".read": "$uid == 'ada'"]]]
        #expect(try canRead(rules, "users/ada/.priority").isAllowed)
    }

    @Test func defaultDocuments() throws {
        let root = try tree(data)
        #expect(RulesDocument.allowAll.canRead("users/ada", auth: nil, root: root, now: testNow).isAllowed)
        #expect(RulesDocument.allowAll.canSet("x", to: Node(.number(1)), auth: nil, root: root, now: testNow).isAllowed)
        #expect(!RulesDocument.denyAll.canRead("users/ada", auth: nil, root: root, now: testNow).isAllowed)
        #expect(!RulesDocument.denyAll.canSet("x", to: Node(.number(1)), auth: nil, root: root, now: testNow).isAllowed)
    }
}
