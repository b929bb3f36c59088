import Persistence
import ServerStorage
import Testing
import Tree

/// Random writes applied to ``SQLiteServerStore``, ``InMemoryServerStore`` and a `Node` updated
/// with `Node.updating(at:to:)` must give the same tree, before and after reopening the file.
struct StoreEquivalenceTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomWritesAgree(seed: UInt64) async throws {
        try await withStoreFile { file in
            var generator = StoredWriteGenerator(random: SeededGenerator(seed: seed))
            let sqlite = try SQLiteServerStore(path: file)
            let memory = InMemoryServerStore()
            var expected = Node.empty
            for step in 0..<250 {
                var writes = (0..<Int.random(in: 1...3, using: &generator.random)).map { _ in generator.write() }
                for index in writes.indices {
                    // As the server marks its writes, from the tree the writes before lead to; every
                    // third step unmarked, as a writer that knows nothing.
                    // Packed nodes are widened either way (one in two objects is packed).
                    if step % 3 != 0 {
                        writes[index].learn(from: expected)
                    } else {
                        writes[index].widenToPackedAncestor(in: expected)
                    }
                    expected = expected.updating(at: writes[index].path, to: writes[index].node)
                }
                try sqlite.commit(writes)
                try memory.commit(writes)
                let stored = try sqlite.loadTree()
                #expect(stored == expected, "seed \(seed) step \(step) after \(writes.map { "\($0.path)=\($0.node)" })")
                #expect(memory.loadTree() == expected, "seed \(seed) step \(step)")
                if stored != expected { return }
            }
            try sqlite.close()
            #expect(try SQLiteServerStore(path: file).loadTree() == expected)
        }
    }

    /// A new child of a wide node costs only its own rows: nothing is cleared where the writer
    /// knows the location was empty; a leaf replaced by a leaf with no leaf above costs its row
    /// only; and everything is cleared where the writer knows nothing.
    @Test func aWriteToAnEmptyLocationClearsNothing() throws {
        let record = try Node(json: .object(["name": .string("ada"), "score": .number(1)]))
        let fresh = try RowPlan.operations(for: [StoredWrite(path: "users/u1", node: record, locationWasEmpty: true)])
        #expect(fresh.filter { if case .upsert = $0 { false } else { true } } == [.deleteRow(""), .deleteRow("users")])
        #expect(fresh.count == 4)
        var replacing = StoredWrite(path: "users/u1/score", node: Node(.number(2)))
        replacing.learn(from: try Node(json: ["users": ["u1": ["name": "ada", "score": 1]]]))
        #expect(try RowPlan.operations(for: [replacing]) == [.upsert(path: "users/u1/score", text: "2")])
        var belowALeaf = StoredWrite(path: "users/u1/score", node: Node(.number(2)))
        belowALeaf.learn(from: try Node(json: ["users": ["u1": 7]]))
        #expect(try RowPlan.operations(for: [belowALeaf]).contains(.deleteRow("users/u1")))
        let unknown = try RowPlan.operations(for: [StoredWrite(path: "users/u1", node: record)])
        #expect(unknown.contains(.deleteRow("users/u1")))
        #expect(unknown.contains(.deleteBelow("users/u1")))
    }

    @Test func inMemoryRejectsWhatSQLiteRejects() async throws {
        try await withStoreFile { file in
            let sqlite = try SQLiteServerStore(path: file)
            let memory = InMemoryServerStore()
            let writes = [
                StoredWrite(path: "ok", node: Node(.number(1))),
                StoredWrite(path: "bad", node: Node(children: [(ChildKey(".priority"), Node(.number(1)))])),
            ]
            let sqliteError = #expect(throws: StoreError.self) { try sqlite.commit(writes) }
            let memoryError = #expect(throws: StoreError.self) { try memory.commit(writes) }
            #expect(sqliteError == memoryError)
            #expect(try sqlite.loadTree() == .empty)
            #expect(memory.loadTree() == .empty)
        }
    }

    @Test func inMemorySettings() {
        let store = InMemoryServerStore()
        store.setSetting("rules", [".read": true])
        #expect(store.setting("rules") == [".read": true])
        store.setSetting("rules", nil)
        #expect(store.setting("rules") == nil)
    }

    /// The in-memory store changes its tree in place, and the trees it was given or gave out (the
    /// database serving the namespace holds the one it loaded) keep their values. Each is compared
    /// with its text taken when it was handed out, which shares no storage with it.
    @Test(arguments: [7, 8, 9] as [UInt64])
    func inMemoryTreesHandedOutKeepTheirValues(seed: UInt64) throws {
        var generator = StoredWriteGenerator(random: SeededGenerator(seed: seed))
        var expected = Node.empty
        for _ in 0..<20 {
            let write = generator.write()
            expected = expected.updating(at: write.path, to: write.node)
        }
        let memory = InMemoryServerStore(tree: expected)
        var handedOut: [(tree: Node, text: String)] = [(expected, expected.jsonText(exportFormat: true))]
        for step in 0..<200 {
            let writes = (0..<Int.random(in: 1...3, using: &generator.random)).map { _ in generator.write() }
            for write in writes { expected = expected.updating(at: write.path, to: write.node) }
            try memory.commit(writes)
            let stored = memory.loadTree()
            #expect(stored == expected, "seed \(seed) step \(step)")
            if step % 10 == 0 { handedOut.append((stored, stored.jsonText(exportFormat: true))) }
        }
        for (index, (tree, text)) in handedOut.enumerated() {
            let now = tree.jsonText(exportFormat: true)
            #expect(now == text, "seed \(seed): tree \(index) changed after it was handed out")
        }
    }
}

/// Keys chosen to collide: prefixes of one another followed by bytes below and above `/`,
/// integer keys, and two spellings of "é" that only differ in bytes.
private let storeKeys = ["a", "ab", "a-b", "a!", "a0", "b", "1", "10", "\u{E9}", "e\u{301}"].map { ChildKey($0) }

/// Random writes for the stores' equivalence tests.
struct StoredWriteGenerator {
    var random: SeededGenerator

    mutating func key() -> ChildKey { storeKeys.randomElement(using: &random) ?? "a" }

    mutating func priority() -> Priority? {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: .number(Double(Int.random(in: -3...3, using: &random)))
        case 1: .string(["x", "y"].randomElement(using: &random) ?? "x")
        default: nil
        }
    }

    mutating func leaf() -> LeafValue {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: .bool(Bool.random(using: &random))
        case 1: .number(Double(Int.random(in: -100...100, using: &random)) / 4)
        default: .string(["", "s", "quote\"", "line\n", "\u{E9}"].randomElement(using: &random) ?? "")
        }
    }

    mutating func node(depth: Int) -> Node {
        let roll = Int.random(in: 0..<10, using: &random)
        if roll == 0 { return .empty }
        if depth == 0 || roll < 5 { return Node(leaf(), priority: priority()) }
        let children = (0..<Int.random(in: 1...3, using: &random)).map { _ in (key(), node(depth: depth - 1)) }
        var map = ChildMap(order: KeyOrder())
        for (key, child) in children where !child.isEmpty { map = map.inserting(key, child) }
        let built = Node(map: map, priority: priority())
        // As the server builds what clients write: small objects packed where they can be.
        guard Bool.random(using: &random),
            let packed = try? Node(json: built.json(exportFormat: true), serverValues: nil, packing: true)
        else {
            return built
        }
        return packed
    }

    mutating func write() -> StoredWrite {
        var keys = (0..<Int.random(in: 0...3, using: &random)).map { _ in key() }
        if Int.random(in: 0..<5, using: &random) == 0 {
            keys.append(.priority)
            let value: Node = Bool.random(using: &random) ? Node(leaf()) : .empty
            return StoredWrite(path: Path(keys: keys), node: value)
        }
        let node = Int.random(in: 0..<4, using: &random) == 0 ? Node.empty : node(depth: 2)
        return StoredWrite(path: Path(keys: keys), node: node)
    }
}
