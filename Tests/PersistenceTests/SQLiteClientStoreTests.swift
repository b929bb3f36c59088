import CanopyTesting
import Foundation
import GRDB
import Testing
import Tree

@testable import ClientCache
@testable import Persistence

/// The client's SQLite store: the server cache by location, the write queue, tracked queries, the
/// size counters, and one store per file.
struct SQLiteClientStoreTests {
    @Test func aLocationReadsItsRowsAboveAtAndBelow() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            try store.overwriteServerCache(Node(json: ["a": ["b": 1, "c": 2], "d": 3]), at: .root)
            #expect(try store.serverCache(at: "a/b") == Node(json: 1))
            try store.overwriteServerCache(Node(json: 5), at: "a/b")
            #expect(try store.serverCache(at: "a") == Node(json: ["b": 5, "c": 2]))
            // Emptying a location hides what the row above still holds there.
            try store.overwriteServerCache(.empty, at: "a")
            #expect(try store.serverCache(at: "a/b") == .empty)
            #expect(try store.serverCache(at: .root) == Node(json: ["d": 3]))
            try store.mergeServerCache([Path("x/y"): Node(json: 1), Path("z"): Node(json: ["w": true])], at: "m")
            #expect(try store.serverCache(at: "m") == Node(json: ["x": ["y": 1], "z": ["w": true]]))
            // Priorities are kept.
            try store.overwriteServerCache(Node(json: ["p": [".value": 1, ".priority": "high"]]), at: "prio")
            #expect(try store.serverCache(at: "prio/p").priority == Priority(leaf: .string("high")))
        }
    }

    @Test func pruningForgetsALocationButWhatIsKeptBelowIt() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            try store.overwriteServerCache(
                Node(json: ["q1": ["a": 1], "q2": ["b": 2, "kept": ["c": 3]]]), at: "rooms")
            try store.overwriteServerCache(Node(json: ["x": 1]), at: "other")
            let before = store.size.serverCache
            try store.pruneServerCache(at: "rooms", keeping: ["rooms/q2/kept", "other"])
            #expect(try store.serverCache(at: "rooms") == Node(json: ["q2": ["kept": ["c": 3]]]))
            #expect(try store.serverCache(at: "other") == Node(json: ["x": 1]))
            #expect(store.size.serverCache < before)
            try store.pruneServerCache(at: .root, keeping: [])
            #expect(try store.serverCache(at: .root) == .empty)
            #expect(store.size.serverCache == 0)
        }
    }

    /// Random overwrites, merges and prunes against the same operations on a tree in memory.
    /// With rows split at 8 bytes, nearly every node with children is stored one row per child.
    @Test(arguments: 0..<8, [16 * 1024, 8])
    func randomOperationsAgreeWithATreeInMemory(seed: UInt64, splitBytes: Int) async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file, splitBytes: splitBytes)
            var random = SeededGenerator(seed: seed)
            var model = Node.empty
            let keys = ["a", "b", "c"]
            func randomPath() -> Path {
                Path(
                    (0..<Int.random(in: 0...3, using: &random)).map { _ in keys.randomElement(using: &random)! }.joined(
                        separator: "/"))
            }
            func randomNode(depth: Int = 0) -> Node {
                if depth > 2 || Bool.random(using: &random) {
                    return Int.random(in: 0..<4, using: &random) == 0
                        ? .empty : Node(.number(Double(Int.random(in: 0..<100, using: &random))))
                }
                var node = Node.empty
                for key in keys where Bool.random(using: &random) {
                    node = node.updatingChild(ChildKey(key), to: randomNode(depth: depth + 1))
                }
                return node
            }
            for step in 0..<300 {
                let path = randomPath()
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6:
                    let node = randomNode()
                    try store.overwriteServerCache(node, at: path)
                    model = model.updating(at: path, to: node)
                case 6..<8:
                    var children: [Path: Node] = [:]
                    for key in keys where Bool.random(using: &random) { children[Path(key)] = randomNode(depth: 1) }
                    try store.mergeServerCache(children, at: path)
                    for (relative, node) in children { model = model.updating(at: path.child(relative), to: node) }
                default:
                    let kept = (0..<2).map { _ in path.child(randomPath()) }
                    let keptNodes = kept.map { (path: $0, node: model.child(at: $0)) }
                    try store.pruneServerCache(at: path, keeping: kept)
                    model = model.updating(at: path, to: .empty)
                    for (keptPath, node) in keptNodes { model = model.updating(at: keptPath, to: node) }
                }
                let probe = randomPath()
                let stored = try store.serverCache(at: probe)
                if stored != model.child(at: probe) {
                    let rows = try store.database.read { db in
                        try Row.fetchAll(db, sql: "SELECT path, value FROM server_cache ORDER BY path").map {
                            "\($0["path"] as String)=\($0["value"] as String)"
                        }
                    }
                    Issue.record(
                        """
                        seed \(seed) split \(splitBytes) step \(step) at /\(probe.wireString): stored \(stored.json().serialized()), \
                        expected \(model.child(at: probe).json().serialized()); rows \(rows)
                        """)
                }
            }
            #expect(try store.serverCache(at: .root) == model)
            #expect(try Self.countedBytes(store) == store.size, "the counters match the rows")
        }
    }

    /// A write below a large cached node reads one small row, not the node: the node is stored a
    /// row per child.
    @Test func aLargeNodeIsStoredARowPerChildSoAWriteBelowItReadsASmallRow() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            var messages: [String: JSONValue] = [:]
            for index in 0..<200 { messages["m\(index)"] = ["text": .string(String(repeating: "x", count: 200))] }
            try store.overwriteServerCache(Node(json: ["messages": .object(messages), "title": "chat"]), at: "chat")
            let rows = try store.database.read { db in
                try String.fetchAll(db, sql: "SELECT path FROM server_cache ORDER BY path")
            }
            #expect(
                rows.count == 201, "a row per message and one for the title: \(rows.prefix(4))")
            #expect(rows.contains("/chat/messages/m7/") && rows.contains("/chat/title/"))
            let longest = try store.database.read { db in
                try Int.fetchOne(db, sql: "SELECT MAX(length(value)) FROM server_cache") ?? 0
            }
            #expect(longest < 16 * 1024)
            try store.overwriteServerCache(Node(json: "edited"), at: "chat/messages/m7/text")
            #expect(try store.serverCache(at: "chat/messages/m7") == Node(json: ["text": "edited"]))
            #expect(try store.serverCache(at: "chat/messages").children.count == 200)
            #expect(try Self.countedBytes(store) == store.size)
        }
    }

    /// A file written by an earlier version is brought up to date and keeps its data.
    @Test func aFileOfAnEarlierFormatIsMigratedWithItsData() async throws {
        try await withStoreFile { file in
            do {
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: file).deletingLastPathComponent(), withIntermediateDirectories: true)
                let queue = try DatabaseQueue(path: file)
                try SQLiteClientStore.migrator.migrate(queue, upTo: "v2")
                try await queue.write { db in
                    try db.execute(
                        sql: "INSERT INTO server_cache (path, value) VALUES ('/rooms/', '{\"r1\":{\"t\":\"a\"}}')")
                    try db.execute(sql: "INSERT INTO server_cache (path, value) VALUES ('/rooms/r1/t/', '\"b\"')")
                }
            }
            let store = try SQLiteClientStore(path: file)
            #expect(try store.serverCache(at: "rooms") == Node(json: ["r1": ["t": "b"]]))
            try store.overwriteServerCache(Node(json: "c"), at: "rooms/r2")
            #expect(try store.serverCache(at: "rooms/r2") == Node(json: "c"))
        }
    }

    /// What a new listener reads before every tracked query is loaded: the queries at and above its
    /// location and one level below it, found through the index.
    @Test func trackedQueriesAtAboveAndJustBelowALocation() async throws {
        try await withStoreFile { file in
            let store = try SQLiteClientStore(path: file)
            let paths: [Path] = ["", "a", "a/b", "a/b/c", "a/b/c/d", "a/bc", "a/b-c", "x"]
            for (id, path) in paths.enumerated() {
                try store.saveTrackedQuery(
                    TrackedQuery(
                        id: id, path: path, queryIdentifier: "default", params: [:], lastUse: 0, isComplete: true,
                        isActive: false))
            }
            #expect(try Set(store.trackedQueries(atOrAbove: "a/b/c").map(\.path)) == ["", "a", "a/b", "a/b/c"])
            #expect(try Set(store.trackedQueries(atOrAbove: .root).map(\.path)) == [""])
            #expect(try Set(store.trackedQueries(childrenOf: "a/b").map(\.path)) == ["a/b/c"])
            #expect(try Set(store.trackedQueries(childrenOf: "a").map(\.path)) == ["a/b", "a/bc", "a/b-c"])
            #expect(try Set(store.trackedQueries(childrenOf: .root).map(\.path)) == ["a", "x"])
            #expect(try Set(store.trackedQueries(below: "a/b").map(\.path)) == ["a/b/c", "a/b/c/d"])
            #expect(try store.trackedQuery(at: "a/bc", queryIdentifier: "default")?.id == 5)
            #expect(try store.trackedQuery(at: "a/bc", queryIdentifier: "other") == nil)
            #expect(try store.nextTrackedQueryID() == paths.count)
            var active = try #require(try store.trackedQuery(at: "x", queryIdentifier: "default"))
            active.isActive = true
            try store.saveTrackedQuery(active)
            try store.deactivateTrackedQueries()
            #expect(try store.trackedQueries().allSatisfy { !$0.isActive })
        }
    }

    @Test func writesSurviveAReopenInIdOrderAndCountTowardTheSize() async throws {
        try await withStoreFile { file in
            do {
                let store = try SQLiteClientStore(path: file)
                try store.saveWrite(PersistedWrite(id: 3, path: "c", isMerge: false, json: ["x": 1]))
                try store.saveWrite(PersistedWrite(id: 1, path: "a", isMerge: true, json: ["b/c": 2, "d": nil]))
                try store.saveWrite(PersistedWrite(id: 2, path: "b", isMerge: false, json: [".sv": "timestamp"]))
                try store.removeWrite(id: 2)
                #expect(store.size.pendingWrites > 0)
            }
            let store = try SQLiteClientStore(path: file)
            #expect(
                try store.writes() == [
                    PersistedWrite(id: 1, path: "a", isMerge: true, json: ["b/c": 2, "d": nil]),
                    PersistedWrite(id: 3, path: "c", isMerge: false, json: ["x": 1]),
                ])
            #expect(try Self.countedBytes(store) == store.size)
            try store.removeAllWrites()
            #expect(try store.writes().isEmpty)
            #expect(store.size.pendingWrites == 0)
        }
    }

    @Test func trackedQueriesKeysAndSettingsRoundTrip() async throws {
        try await withStoreFile { file in
            let query = TrackedQuery(
                id: 7, path: "scores", queryIdentifier: "{\"i\":\".value\",\"l\":4,\"vf\":\"r\"}",
                params: ["i": ".value", "l": 4, "vf": "r"], lastUse: 1_700_000_000_000, isComplete: true,
                isActive: false)
            do {
                let store = try SQLiteClientStore(path: file)
                try store.saveTrackedQuery(query)
                try store.saveTrackedQuery(
                    TrackedQuery(
                        id: 8, path: "x", queryIdentifier: "default", params: [:], lastUse: 1, isComplete: false,
                        isActive: true))
                try store.setTrackedKeys(["a", "b"], queryID: 7)
                try store.setTrackedKeys(["b", "c"], queryID: 7)
                try store.deleteTrackedQuery(id: 8)
                try store.setSetting("auth", "token-1")
            }
            let store = try SQLiteClientStore(path: file)
            #expect(try store.trackedQueries() == [query])
            #expect(try store.trackedKeys(queryID: 7) == ["b", "c"])
            #expect(try store.setting("auth") == "token-1")
            try store.setSetting("auth", nil)
            #expect(try store.setting("auth") == nil)
        }
    }

    @Test func aSecondStoreOnTheSameFileIsRefusedUntilTheFirstCloses() async throws {
        try await withStoreFile { file in
            var first: SQLiteClientStore? = try SQLiteClientStore(path: file)
            #expect(throws: StoreError.inUse(file: file)) { try SQLiteClientStore(path: file) }
            #expect(first != nil)
            first = nil
            #expect(throws: Never.self) { try SQLiteClientStore(path: file) }
        }
    }

    /// `Database.shutDown()` closes its store while a read beside the SDK's queue may still hold
    /// it; the app's next `Database` must find the file free (it ran in memory only before).
    @Test func aClosedStoreFreesTheFileWhileSomethingStillHoldsIt() async throws {
        try await withStoreFile { file in
            let first = try SQLiteClientStore(path: file)
            try first.setSetting("auth", "token-1")
            first.close()
            // A process another test launches at that moment holds a copy of every descriptor,
            // the lock's included, until it execs (O_CLOEXEC closes them only then): the file is
            // free once it did (seen once in a full run: "in use by another store").
            var opened: SQLiteClientStore?
            #expect(
                await eventually(timeout: .seconds(10)) {
                    opened = try SQLiteClientStore(path: file); return true
                })
            let second = try #require(opened)
            #expect(try second.setting("auth") == "token-1")
            #expect(throws: (any Error).self) { try first.setting("auth") }
            withExtendedLifetime(first) {}
        }
    }

    @Test func aFileThatIsNotADatabaseOrAnUnwritableFolderCannotBeOpened() async throws {
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let garbage = folder.appendingPathComponent("garbage.sqlite").path
            try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: garbage))
            #expect {
                try SQLiteClientStore(path: garbage)
            } throws: { error in
                guard case .cannotOpen(let file, _)? = error as? StoreError else { return false }
                return file == garbage
            }
            let blocker = folder.appendingPathComponent("file").path
            try Data().write(to: URL(fileURLWithPath: blocker))
            #expect {
                try SQLiteClientStore(path: blocker + "/below/cache.sqlite")
            } throws: { error in
                guard case .cannotOpen? = error as? StoreError else { return false }
                return true
            }
        }
    }

    /// The sizes recounted from the rows.
    static func countedBytes(_ store: SQLiteClientStore) throws -> ClientStoreSize {
        try store.database.read { db in
            let sum = "COALESCE(SUM(length(CAST(path AS BLOB)) + length(CAST(value AS BLOB))), 0)"
            return ClientStoreSize(
                serverCache: try Int.fetchOne(db, sql: "SELECT \(sum) FROM server_cache") ?? 0,
                pendingWrites: try Int.fetchOne(db, sql: "SELECT \(sum) FROM writes") ?? 0)
        }
    }
}
