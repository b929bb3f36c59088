import Foundation
import GRDB
import Persistence
import ServerStorage
import Testing
import Tree

struct SQLiteServerStoreTests {
    /// Commits `writes` one commit each to `store`, and checks that the store, a reopened store and
    /// `Node.updating(at:to:)` agree.
    private func apply(_ writes: [StoredWrite], to store: SQLiteServerStore, from start: Node) throws -> Node {
        var expected = start
        for write in writes {
            try store.commit([write])
            expected = expected.updating(at: write.path, to: write.node)
            #expect(try store.loadTree() == expected, "after \(write.path) = \(write.node)")
        }
        let reopened = try SQLiteServerStore(path: store.path)
        #expect(try reopened.loadTree() == expected)
        return expected
    }

    @Test func nestedDataWithPrioritiesSurvivesReopening() async throws {
        try await withStoreFile { file in
            let tree = try Node(json: [
                ".priority": "root",
                "users": [
                    ".priority": 5,
                    "ada": [".value": "Ada", ".priority": 1.5],
                    "bob": ["age": 42, "admin": true, "score": -0.125, "big": 1e300],
                ],
                "list": [1, 2, 3],
                "text": "quotes \" backslash \\ newline \n tab \t control \u{01} é e\u{301} 😀 slash /",
                "10": false, "9": "nine", "-Nabc": ["x": 1],
            ])
            do {
                let store = try SQLiteServerStore(path: file)
                try store.commit([StoredWrite(path: .root, node: tree)])
                #expect(try store.loadTree() == tree)
            }
            let reopened = try SQLiteServerStore(path: file)
            let loaded = try reopened.loadTree()
            #expect(loaded == tree)
            #expect(loaded.priority == .string("root"))
            #expect(loaded.child(at: "users").priority == .number(5))
            #expect(loaded.child(at: "users/ada").priority == .number(1.5))
            #expect(loaded.child(at: "users/ada").leafValue == .string("Ada"))
        }
    }

    @Test func rootLeafAndRootPriority() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            _ = try apply(
                [
                    StoredWrite(path: .root, node: Node(.number(7), priority: .number(1))),
                    StoredWrite(path: ".priority", node: Node(.string("p"))),
                    try StoredWrite("a", 1),
                    StoredWrite(path: ".priority", node: Node(.number(3))),
                    try StoredWrite("", ["b": 2]),
                    try StoredWrite("", nil),
                    StoredWrite(path: ".priority", node: Node(.number(3))),
                ], to: store, from: .empty)
            #expect(try store.loadTree() == .empty)
        }
    }

    @Test func overwriteRemovesOldLeavesButNotSiblingsSharingThePrefix() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let start = try Node(json: [
                "a": ["x": 1, "b": ["deep": true], "bc": 2, "b-c": 3, "b!": 4, "b0": 5],
                "ab": 6, "a-b": 7, "a!": 8, "a0": 9,
            ])
            try store.commit([StoredWrite(path: .root, node: start)])
            let tree = try apply(
                [try StoredWrite("a/b", ["new": 1]), try StoredWrite("a/b", "leaf"), try StoredWrite("a", 10)],
                to: store, from: start)
            #expect(tree == (try Node(json: ["a": 10, "ab": 6, "a-b": 7, "a!": 8, "a0": 9])))
        }
    }

    @Test func writeBelowALeafReplacesTheLeafAndKeepsItsPriority() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let tree = try apply(
                [
                    try StoredWrite("a", [".value": 1, ".priority": 9]),
                    try StoredWrite("a/b/c", true),
                    try StoredWrite("x", 1),
                    try StoredWrite("x/y/.priority", 4),  // below a leaf: changes nothing
                    try StoredWrite("x/y", nil),  // deletion below a leaf: changes nothing
                ], to: store, from: .empty)
            #expect(tree == (try Node(json: ["a": [".priority": 9, "b": ["c": true]], "x": 1])))
        }
    }

    /// Within one transaction the store remembers which ancestors hold no leaf; a later write that
    /// puts a leaf at such an ancestor must make it forget.
    @Test func oneCommitReplacingLeavesAndInnerNodesInTurn() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let writes = [
                try StoredWrite("a/b/c", 1),
                try StoredWrite("a/b", 2),  // a leaf where an ancestor was
                try StoredWrite("a/b/d", 3),  // so this must delete it again
                try StoredWrite("a", 4),
                try StoredWrite("a/x", 5),
                try StoredWrite("", 6),  // the root becomes a leaf
                try StoredWrite("q", 7),
                try StoredWrite("q/r/.priority", 1),
                try StoredWrite("q/r/s", nil),
            ]
            var expected = Node.empty
            for write in writes { expected = expected.updating(at: write.path, to: write.node) }
            try store.commit(writes)
            #expect(expected == (try Node(json: ["q": 7])))
            #expect(try store.loadTree() == expected)
            #expect(try SQLiteServerStore(path: file).loadTree() == expected)
        }
    }

    @Test func deletionsRemoveDataAndPrioritiesOfEmptiedAncestors() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let tree = try apply(
                [
                    try StoredWrite("a", [".priority": 1, "b": [".priority": 2, "c": 3]]),
                    try StoredWrite("a/b/c", nil),  // empties a/b and a: both priorities go
                    try StoredWrite("a/b/c", 4),  // so they do not come back
                    try StoredWrite("k", [".priority": 1, "x": 1, "y": 2]),
                    try StoredWrite("k/x", nil),  // k keeps y and its priority
                    try StoredWrite("gone", nil),
                ], to: store, from: .empty)
            #expect(tree == (try Node(json: ["a": ["b": ["c": 4]], "k": [".priority": 1, "y": 2]])))
        }
    }

    @Test func priorityWrites() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let tree = try apply(
                [
                    try StoredWrite("a/.priority", 1),  // empty location: not stored
                    try StoredWrite("a/b", "leaf"),
                    try StoredWrite("a/.priority", 2),
                    try StoredWrite("a/b/.priority", "p"),
                    try StoredWrite("a/b", "other"),  // a write replaces the priority
                    try StoredWrite("a/b/.priority", "q"),
                    try StoredWrite("a/b/.priority", true),  // not a priority: removes it
                    try StoredWrite("a/b/.priority", 3),
                    try StoredWrite("a/b/.priority", nil),
                    try StoredWrite("n/.priority", ["not": "a priority"]),
                ], to: store, from: .empty)
            #expect(tree == (try Node(json: ["a": [".priority": 2, "b": "other"]])))
        }
    }

    @Test func multiWriteCommitIsAtomic() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let start = try Node(json: ["a": 1, "b": ["c": 2]])
            try store.commit([StoredWrite(path: .root, node: start)])
            let badChild = Node(children: [(ChildKey("x/y"), Node(.number(1)))])
            let failing: [[StoredWrite]] = [
                [try StoredWrite("a", 10), try StoredWrite("b", nil), StoredWrite(path: "z", node: badChild)],
                [
                    try StoredWrite("", nil),
                    StoredWrite(path: Path(keys: ["b", ".priority", "c"]), node: Node(.number(1))),
                ],
                [try StoredWrite("a", 10), StoredWrite(path: Path(keys: ["b", ""]), node: Node(.number(1)))],
            ]
            for writes in failing {
                #expect(throws: StoreError.self) { try store.commit(writes) }
                #expect(try store.loadTree() == start)
            }
            let error = #expect(throws: StoreError.self) { try store.commit(failing[0]) }
            #expect(error == .invalidWrite(path: "z", reason: "child key \"x/y\" below it contains '/'"))
            #expect(try SQLiteServerStore(path: file).loadTree() == start)
            // The same writes without the bad one commit together.
            try store.commit(Array(failing[0].dropLast()))
            #expect(try store.loadTree() == (try Node(json: ["a": 10])))
        }
    }

    @Test func closedStoreThrowsAndKeepsData() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit([try StoredWrite("a", 1)])
            try store.close()
            let error = #expect(throws: StoreError.self) { try store.commit([try StoredWrite("a", 2)]) }
            #expect(error == .sqlite(file: file, operation: "committing 1 write(s)", message: "the store is closed"))
            // Reads too (GRDB passed SQLite a null connection for them, which crashed the process).
            let closed = StoreError.sqlite(file: file, operation: "loading the tree", message: "the store is closed")
            #expect(throws: closed) { try store.loadTree() }
            #expect(throws: StoreError.self) { try store.setting("rules") }
            #expect(throws: StoreError.self) { try store.setSetting("rules", .string("{}")) }
            #expect(throws: StoreError.self) { try store.quarantinedRows() }
            try store.close()
            #expect(try SQLiteServerStore(path: file).loadTree() == (try Node(json: ["a": 1])))
        }
    }

    @Test func settingsRoundTrip() async throws {
        try await withStoreFile { file in
            let rules: JSONValue = ["rules": [".read": true, ".write": "auth != null", "limits": [1, 2.5]]]
            do {
                let store = try SQLiteServerStore(path: file)
                #expect(try store.setting("rules") == nil)
                try store.setSetting("rules", rules)
                try store.setSetting("other", "x")
                try store.setSetting("other", "y")
                try store.setSetting("null", .null)
                #expect(try store.setting("rules") == rules)
                try store.setSetting("gone", 1)
                try store.setSetting("gone", nil)
            }
            let store = try SQLiteServerStore(path: file)
            #expect(try store.setting("rules") == rules)
            #expect(try store.setting("other") == "y")
            #expect(try store.setting("null") == .null)
            #expect(try store.setting("gone") == nil)
            #expect(try store.loadTree() == .empty)
        }
    }

    @Test func unopenableFileSaysWhere() async throws {
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let blocker = folder.appendingPathComponent("file")
            try Data("x".utf8).write(to: blocker)
            let path = blocker.appendingPathComponent("main.sqlite").path
            let error = #expect(throws: StoreError.self) { try SQLiteServerStore(path: path) }
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test func normalDurabilityStoresTheSame() async throws {
        try await withStoreFile { file in
            let tree = try Node(json: ["a": ["b": 1, ".priority": 2]])
            do {
                let store = try SQLiteServerStore(path: file, durability: .normal)
                try store.commit([StoredWrite(path: .root, node: tree)])
            }
            #expect(try SQLiteServerStore(path: file, durability: .normal).loadTree() == tree)
        }
    }
}

/// Loading is never all-or-nothing.
struct SQLiteServerStoreQuarantineTests {
    @Test func anUnreadableRowIsSetAsideAndTheRestLoads() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit([try StoredWrite("", ["a": 1, "b": ["c": "kept"], "d": true])])
            try store.close()
            let database = try DatabaseQueue(path: file)
            try await database.write { db in
                try db.execute(sql: "UPDATE nodes SET value = 'null' WHERE path = 'a'")
                try db.execute(sql: "UPDATE nodes SET value = '{not json' WHERE path = 'd'")
            }
            try database.close()

            let reopened = try SQLiteServerStore(path: file)
            #expect(try reopened.loadTree() == (try Node(json: ["b": ["c": "kept"]])))
            #expect(try reopened.quarantinedRows().map(\.path) == ["a", "d"])
            #expect(try reopened.quarantinedRows().map(\.value) == ["null", "{not json"])
            // Set aside for good: the next load reads the same tree and quarantines nothing more.
            #expect(try reopened.loadTree() == (try Node(json: ["b": ["c": "kept"]])))
            #expect(try reopened.quarantinedRows().count == 2)
        }
    }

    @Test func aNonFiniteNumberIsNeverStored() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            for node in [Node(.number(.infinity)), Node(.string("v"), priority: .number(-.infinity))] {
                #expect(throws: StoreError.self) { try store.commit([StoredWrite(path: "x", node: node)]) }
            }
            #expect(try store.loadTree() == .empty)
        }
    }
}
