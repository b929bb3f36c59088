import Testing
import Tree

@testable import ServerStorage

struct TreeLoaderTests {
    private func load(_ rows: [(String, String)]) throws -> Node {
        var loader = TreeLoader()
        for (path, value) in rows { try loader.add(path: path, value: value) }
        return loader.build()
    }

    @Test func rowsInAnyOrderBuildTheSameTree() throws {
        let rows = [
            ("a", "1"), ("a!", "2"), ("a/.priority", "3"), ("b/c/d", "\"x\""), ("b/.priority", "\"p\""),
            ("b/c/e", "true"), (".priority", "0.5"), ("10", "false"),
        ]
        let expected = try Node(json: [
            ".priority": 0.5,
            "a": [".value": 1, ".priority": 3], "a!": 2, "10": false,
            "b": [".priority": "p", "c": ["d": "x", "e": true]],
        ])
        #expect(try load(rows) == expected)
        #expect(try load(rows.reversed()) == expected)
        #expect(try load(rows.sorted { $0.0 < $1.0 }) == expected)
    }

    /// A record's row becomes its packed node at once; rows below it or for its priority (which
    /// commits never write beside a packed row) read as they did when it was an entry like others.
    @Test func packedRowsInAnyOrderBuildTheSameTree() throws {
        let records = (0..<40).map { index in
            ("users/u\(index)", #"{"n":\#(index),"name":"user \#(index)"}"#)
        }
        let rows =
            records + [
                ("users/u3/.priority", "1"), ("users/u5/x", "true"), ("users/u40", #"{"bio":"line\nfeed"}"#),
                ("top", "2"),
            ]
        var members: [String: JSONValue] = [:]
        for index in 0..<40 { members["u\(index)"] = ["n": .number(Double(index)), "name": .string("user \(index)")] }
        members["u5"] = ["x": true]
        members["u40"] = ["bio": "line\nfeed"]
        let expected = try Node(json: ["users": .object(members), "top": 2])
        for order in [rows, rows.reversed(), rows.shuffled(), rows.sorted { $0.0 < $1.0 }] {
            let loaded = try load(order)
            #expect(loaded == expected)
            #expect(loaded.child(at: "users/u1").packedText == #"{"n":1,"name":"user 1"}"#)
            #expect(loaded.child(at: "users/u3").priority == nil)
        }
    }

    @Test func orphanPrioritiesAreDropped() throws {
        #expect(try load([("a/.priority", "1"), ("b", "2")]) == (try Node(json: ["b": 2])))
        #expect(try load([(".priority", "1")]) == .empty)
        #expect(try load([("", "7"), (".priority", "1")]) == Node(.number(7), priority: .number(1)))
    }

    @Test func undecodableRowsThrowWithTheirPath() {
        #expect(throws: TreeLoaderError.self) { try load([("a", "{}")]) }
        #expect(throws: TreeLoaderError.self) { try load([("a/.priority", "true")]) }
        #expect(throws: TreeLoaderError.self) { try load([("a", "\"unterminated")]) }
    }
}

/// A packed node is one row holding its text, read back as the same packed node; a row that only
/// looks like one is set aside as unreadable.
struct PackedRowTests {
    @Test func aPackedNodeIsOneRowAndLoadsAsTheSameNode() throws {
        let record = try Node(
            json: ["bio": "line\nfeed", "name": "ada", "score": 36, "tags": ["a": true]], serverValues: nil,
            packing: true)
        let text = try #require(record.packedText)
        let operations = try RowPlan.operations(for: [
            StoredWrite(path: "users/ada", node: record, locationWasEmpty: true, noLeafAbove: true)
        ])
        #expect(operations == [.upsert(path: "users/ada", text: text)])
        var loader = TreeLoader()
        try loader.add(path: "users/ada", value: text)
        let loaded = loader.build().child(at: "users/ada")
        #expect(loaded.packedText == text)
        #expect(loaded == record)
    }

    @Test(arguments: [
        "{not json", "{}", #"{"b":1,"a":2}"#, #"{"a": 1}"#, #"{"a":1.0}"#, #"{"0":1}"#, #"{".priority":1,"a":2}"#,
    ])
    func rowsThatAreNotPackedTextAreUnreadable(_ value: String) {
        var loader = TreeLoader()
        #expect(throws: TreeLoaderError.self) { try loader.add(path: "a", value: value) }
    }

    /// A write below a packed node becomes a write of the whole node, so that its row is replaced
    /// rather than deleted with the node's other members.
    @Test func aWriteInsideAPackedNodeRewritesTheNode() throws {
        let record = try Node(json: ["name": "ada", "score": 36], serverValues: nil, packing: true)
        let tree = Node.empty.updating(at: "users/ada", to: record)
        var write = StoredWrite(path: "users/ada/score", node: Node(.number(37)))
        write.learn(from: tree)
        #expect(write.path == "users/ada")
        #expect(write.node == (try Node(json: ["name": "ada", "score": 37])))
        #expect(try RowPlan.operations(for: [write]).contains(.deleteRow("users/ada")))
        var priority = StoredWrite(path: "users/ada/.priority", node: Node(.number(1)))
        priority.learn(from: tree)
        #expect(priority.path == "users/ada")
        #expect(priority.node.priority == .number(1))
        var beside = StoredWrite(path: "users/bob", node: Node(.number(1)))
        beside.learn(from: tree)
        #expect(beside.path == "users/bob")
    }
}
