import PropertyBased
import Testing
import Tree

/// A built index reads what each child sorts by once, when the child enters it. Whatever it keeps,
/// its order must be ``Index/compare(_:_:)``'s for every index, every kind of value and priority,
/// through updates, and from every post a query starts at.
struct BuiltIndexOrderTests {
    static let indexes: [Index] = [.priority, .value, .key, .child("score"), .child("m/r")]

    static func leaf(_ random: inout Xoshiro) -> Node? {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: nil
        case 1: Node(.bool(Bool.random(using: &random)))
        case 2, 3: Node(.number(Double(Int.random(in: -3...3, using: &random)) / 2))
        case 4: Node(.string(["", "a", "b", "ab", "é", "10"].randomElement(using: &random) ?? "a"))
        default: Node(.string(String(Int.random(in: 0...3, using: &random))))
        }
    }

    static func priority(_ random: inout Xoshiro) -> Priority? {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: nil
        case 1: .number(Double(Int.random(in: -2...2, using: &random)))
        case 2: .string(["a", "b", "1"].randomElement(using: &random) ?? "a")
        default: nil
        }
    }

    /// A child: a leaf, or an object holding `score` and `m/r` (either may be absent or an object).
    static func child(_ random: inout Xoshiro) -> Node {
        var node: Node
        if Int.random(in: 0..<4, using: &random) == 0 {
            node = leaf(&random) ?? Node(.bool(true))
        } else {
            node = Node.empty.updatingChild("name", to: Node(.string("n")))
            if let score = leaf(&random) { node = node.updatingChild("score", to: score) }
            if Int.random(in: 0..<5, using: &random) == 0 {
                node = node.updating(at: "score/deep", to: Node(.number(1)))
            }
            if let rank = leaf(&random) { node = node.updating(at: "m/r", to: rank) }
        }
        return node.withPriority(priority(&random))
    }

    static let keys = ["a", "b", "c", "1", "2", "10", "-1", "z", "aa", "00"]

    static func expectOrder(_ node: Node, _ index: Index, _ what: String) {
        let expected = node.children.map { NamedNode(name: $0.key, node: $0.value) }
            .sorted { index.compare($0, $1) < 0 }
        #expect(Array(node.children(in: index)) == expected, "\(what), index \(index)")
        #expect(Array(node.children(in: index, reverse: true)) == expected.reversed(), "\(what), index \(index)")
    }

    @Test(arguments: 0..<40)
    func builtAndMaintainedIndexesKeepCompareOrder(seed: UInt64) throws {
        // A fixed seed per case, so that a failure repeats.
        var random = Xoshiro(seed: (seed, 0x9E37_79B9, 0xBF58_476D, 0x94D0_49BB))
        var node = Node.empty
        for key in Self.keys where Bool.random(using: &random) {
            node = node.updatingChild(ChildKey(key), to: Self.child(&random))
        }
        for index in Self.indexes { Self.expectOrder(node, index, "seed \(seed), built") }
        for step in 0..<30 {
            let key = ChildKey(Self.keys.randomElement(using: &random) ?? "a")
            switch Int.random(in: 0..<4, using: &random) {
            case 0: node = node.updatingChild(key, to: .empty)
            case 1: node = node.updating(at: Path("\(key.string)/score"), to: Self.leaf(&random) ?? .empty)
            default: node = node.updatingChild(key, to: Self.child(&random))
            }
            for index in Self.indexes {
                if index == .value || index == .child("score") {
                    // Carried from the node before, not built afresh.
                    #expect(node.children.isEmpty || node.hasBuiltIndex(index), "seed \(seed), step \(step)")
                }
                Self.expectOrder(node, index, "seed \(seed), after step \(step)")
            }
        }
        // Every post a query can start from: the ends, and a value with a key.
        let sorted = Dictionary(
            uniqueKeysWithValues: Self.indexes.map { index in
                (
                    index.wireName,
                    node.children.map { NamedNode(name: $0.key, node: $0.value) }
                        .sorted { index.compare($0, $1) < 0 }
                )
            })
        for index in Self.indexes {
            var posts = [index.minPost, index.maxPost]
            for _ in 0..<8 {
                let value = Self.leaf(&random) ?? .empty
                let name = ChildKey(Self.keys.randomElement(using: &random) ?? "a")
                posts.append(index.makePost(value, name: name))
            }
            let all = sorted[index.wireName] ?? []
            for post in posts {
                #expect(
                    Array(node.children(in: index, from: post)) == all.filter { index.compare($0, post) >= 0 },
                    "seed \(seed), index \(index), from \(post)")
                #expect(
                    Array(node.children(in: index, from: post, reverse: true))
                        == all.filter { index.compare($0, post) <= 0 }.reversed(),
                    "seed \(seed), index \(index), back from \(post)")
            }
        }
    }
}
