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
