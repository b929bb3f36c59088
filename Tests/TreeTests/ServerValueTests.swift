import Testing
import Tree

struct ServerValueTests {
    static let context = ServerValueContext(now: 1_700_000_000_123)

    @Test func timestampResolvesToNowEverywhereInOneWrite() throws {
        let json: JSONValue = [
            "created": [".sv": "timestamp"],
            "nested": ["deep": ["at": [".sv": "timestamp"]]],
            "list": [[".sv": "timestamp"], "plain"],
        ]
        let node = try Node(json: json, serverValues: Self.context)
        let now = Node(.number(1_700_000_000_123))
        #expect(node.child("created") == now)
        #expect(node.child(at: "nested/deep/at") == now)
        #expect(node.child(at: "list/0") == now)
        #expect(node.child(at: "list/1") == Node(.string("plain")))
    }

    @Test func incrementAddsToExistingNumber() throws {
        let existing = try Node(json: ["count": 5, "score": ["points": 1.5], "name": "ada"])
        let json: JSONValue = [
            "count": [".sv": ["increment": 2]],
            "score": ["points": [".sv": ["increment": -0.5]]],
            "name": [".sv": ["increment": 3]],
            "fresh": [".sv": ["increment": 4]],
        ]
        let node = try Node(json: json, existing: existing, serverValues: Self.context)
        #expect(node.child("count") == Node(.number(7)))
        #expect(node.child(at: "score/points") == Node(.number(1)))
        // A non-number or absent current value counts as 0.
        #expect(node.child("name") == Node(.number(3)))
        #expect(node.child("fresh") == Node(.number(4)))
    }

    @Test func incrementAtAWrittenPathUsesTheDataThere() throws {
        let root = try Node(json: ["stats": ["visits": 41]])
        let path: Path = "stats/visits"
        let node = try Node(
            json: [".sv": ["increment": 1]], at: path, existing: root.child(at: path), serverValues: Self.context)
        #expect(node == Node(.number(42)))
        let onObject = try Node(
            json: [".sv": ["increment": 1]], at: "stats", existing: root.child("stats"), serverValues: Self.context)
        #expect(onObject == Node(.number(1)))
    }

    @Test func priorityServerValues() throws {
        let node = try Node(json: ["a": 1, ".priority": [".sv": "timestamp"]], serverValues: Self.context)
        #expect(node.priority == .number(1_700_000_000_123))

        let existing = Node(.string("v"), priority: .number(3))
        let incremented = try Node(
            json: [".value": "w", ".priority": [".sv": ["increment": 1]]], existing: existing,
            serverValues: Self.context)
        #expect(incremented == Node(.string("w"), priority: .number(4)))

        let valued = try Node(
            json: [".value": [".sv": "timestamp"], ".priority": "p"], serverValues: Self.context)
        #expect(valued == Node(.number(1_700_000_000_123), priority: .string("p")))
    }

    @Test(
        arguments: [
            [".sv": "now"],
            [".sv": 1],
            [".sv": nil],
            [".sv": ["increment": "1"]],
            [".sv": ["increment": true]],
            [".sv": ["decrement": 1]],
            [".sv": ["increment": 1, "extra": 2]],
            [".sv": [:]],
        ] as [JSONValue])
    func unknownServerValuesAreRejected(json: JSONValue) {
        let error = #expect(throws: TreeError.self) {
            try Node(json: ["a": json], serverValues: Self.context)
        }
        guard case .invalidData(let path, _)? = error else {
            Issue.record("expected invalidData, got \(String(describing: error))")
            return
        }
        #expect(path == "a")
        #expect(throws: TreeError.self) { try ServerValue(json: json[".sv"] ?? .null, path: .root) }
    }

    @Test func infiniteIncrementIsRejected() {
        #expect(throws: TreeError.self) {
            try Node(json: [".sv": ["increment": .number(.infinity)]], serverValues: Self.context)
        }
    }

    @Test func serverValuesNeedAContext() {
        let inputs: [JSONValue] = [
            [".sv": "timestamp"],
            ["a": ["b": [".sv": ["increment": 1]]]],
            ["a": 1, ".priority": [".sv": "timestamp"]],
        ]
        for json in inputs {
            #expect(throws: TreeError.self, "\(json.serialized())") { try Node(json: json) }
        }
        #expect(throws: TreeError.self) { try Node(jsonText: #"{"t": {".sv": "timestamp"}}"#) }
    }

    @Test func placeholdersAreFoundAtAnyDepth() {
        #expect(!JSONValue.number(1).containsServerValue)
        #expect(!(["a": ["b": [1, "sv"]], ".priority": 2] as JSONValue).containsServerValue)
        #expect((["a": ["b": [1, [".sv": "timestamp"]]]] as JSONValue).containsServerValue)
        #expect(([".value": 1, ".priority": [".sv": "timestamp"]] as JSONValue).containsServerValue)
        #expect(ServerValue.increment(2).json.containsServerValue)
    }

    @Test func placeholderSpelling() throws {
        #expect(ServerValue.timestamp.json == [".sv": "timestamp"])
        #expect(ServerValue.increment(2).json == [".sv": ["increment": 2]])
        for value in [ServerValue.timestamp, .increment(-1.5)] {
            #expect(try ServerValue(json: value.json[".sv"] ?? .null, path: .root) == value)
        }
        #expect(try ServerValue.timestamp.resolved(existing: .empty, now: 5) == .number(5))
        #expect(try ServerValue.increment(2).resolved(existing: Node(.number(1)), now: 5) == .number(3))
        #expect(try ServerValue.increment(2).resolved(existing: Node(.bool(true)), now: 5) == .number(2))
    }
}
