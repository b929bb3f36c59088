import Testing
import Tree

/// What ``Node/init(json:at:existing:serverValues:)`` refuses so that nothing unstorable reaches a
/// tree: it is the one validator the server's memory and store share.
struct WriteValidationTests {
    static let context = ServerValueContext(now: 1_700_000_000_000)

    @Test func anIncrementThatOverflowsIsRefused() {
        let existing = Node(.number(1.7e308))
        #expect(throws: TreeError.self) {
            try Node(json: [".sv": ["increment": 1.7e308]], at: "n/x", existing: existing, serverValues: Self.context)
        }
        #expect(throws: TreeError.self) {
            try Node(
                json: [".sv": ["increment": -1.7e308]], at: "n/x", existing: Node(.number(-1.7e308)),
                serverValues: Self.context)
        }
        do {
            _ = try ServerValue.increment(1.7e308).resolved(existing: existing, now: 0, at: "n/x")
            Issue.record("an overflowing increment resolved")
        } catch {
            #expect(
                error == .invalidData(path: "n/x", reason: "increment of 1.7e+308 by 1.7e+308 is not a finite number"))
        }
    }

    @Test func anIncrementThatStaysFiniteIsKept() throws {
        let node = try Node(
            json: [".sv": ["increment": 1]], at: "n/x", existing: Node(.number(1.7e308)), serverValues: Self.context)
        #expect(node == Node(.number(1.7e308 + 1)))
    }

    @Test func anOverflowingPriorityIncrementIsRefused() {
        let existing = Node(.string("v"), priority: .number(1.7e308))
        #expect(throws: TreeError.self) {
            try Node(
                json: [".value": "w", ".priority": [".sv": ["increment": 1.7e308]]], existing: existing,
                serverValues: Self.context)
        }
        #expect(throws: TreeError.self) {
            try Node(
                json: [".sv": ["increment": 1.7e308]], at: "a/.priority", existing: Node(.number(1.7e308)),
                serverValues: Self.context)
        }
    }

    @Test(arguments: [
        [".sv": "timestamp", "x": 1] as JSONValue,
        [".sv": ["increment": 1], ".priority": 1],
        ["a": [".sv": "timestamp", "b": 2]],
        [".priority": [".sv": "timestamp", "x": 1], "a": 1],
    ])
    func aServerValueBesideOtherMembersIsRefused(_ json: JSONValue) {
        #expect(throws: TreeError.self) { try Node(json: json, at: "n", serverValues: Self.context) }
    }

    @Test(arguments: ["a/.info", ".info/connected", "a/.info/x", "a/.priority/x", ".priority/a"])
    func unwritableLocationsAreRefused(_ path: String) {
        let location = Path(path)
        #expect(throws: TreeError.self) { try location.checkWritable() }
        #expect(throws: TreeError.self) { try Node(json: 1, at: location) }
    }

    @Test func aJoinedUpdatePathIsCheckedAsAWhole() throws {
        let base = try Path(validating: "a/.priority")
        try base.checkWritable()
        #expect(throws: TreeError.self) { try base.child(Path(validating: "x")).checkWritable() }
        #expect(throws: TreeError.self) { try Path("a").child(Path(validating: ".info/x")).checkWritable() }
    }

    @Test(arguments: [["x": 1] as JSONValue, true, [1, 2], [".value": 1]])
    func aPriorityLocationTakesOnlyPriorities(_ json: JSONValue) {
        #expect(throws: TreeError.self) { try Node(json: json, at: "a/.priority") }
    }

    @Test func aPriorityLocationTakesNumbersStringsNullAndServerValues() throws {
        #expect(try Node(json: 5, at: "a/.priority") == Node(.number(5)))
        #expect(try Node(json: "p", at: "a/.priority") == Node(.string("p")))
        #expect(try Node(json: .null, at: "a/.priority") == .empty)
        let stamped = try Node(json: [".sv": "timestamp"], at: "a/.priority", serverValues: Self.context)
        #expect(stamped == Node(.number(1_700_000_000_000)))
    }

    @Test func aBooleanPriorityMemberIsRefused() {
        #expect(throws: TreeError.self) { try Node(json: ["a": 1, ".priority": true]) }
    }
}
