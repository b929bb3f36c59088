import PropertyBased
import Testing
import Tree

/// A node queried once by an index keeps that index sorted through every update derived from it, so
/// a listener's next query costs O(log n) instead of a fresh sort, and still sees PROTOCOL order.
struct IndexMaintenanceTests {
    static let score = Index.child("score")

    /// Every kind of indexed value, listed in key order so that value order differs from it. Built
    /// afresh for each use: an index built by one test would otherwise be seen by the others.
    static var mixed: Node {
        try! Node(
            json: [
                "a": ["score": "x", "name": "ay"],
                "b": ["score": 3],
                "c": ["name": "no score"],
                "d": ["score": true],
                "e": ["score": ["nested": 1]],
                "f": ["score": -1.5],
                "g": ["score": false],
                "h": ["score": "a"],
                "i": ["score": 3],
                "10": ["score": 3],
                "2": ["score": 3],
            ])
    }

    static func keys(_ node: Node, _ index: Index = score, reverse: Bool = false) -> [String] {
        node.children(in: index, reverse: reverse).map(\.name.string)
    }

    static func queried(_ node: Node, _ index: Index = score) -> Node {
        _ = node.firstChild(in: index)
        return node
    }

    @Test func aNodeNeverQueriedHasNoBuiltIndex() throws {
        let node = Self.mixed.updatingChild("z", to: try Node(json: ["score": 1]))
        #expect(!node.hasBuiltIndex(Self.score))
        #expect(!node.hasBuiltIndex(.value))
        // Key order is the child map itself.
        _ = Self.keys(node, .key)
        #expect(!node.hasBuiltIndex(.key))
    }

    @Test func queryingBuildsOnlyThatIndexInProtocolOrder() {
        let node = Self.queried(Self.mixed)
        #expect(node.hasBuiltIndex(Self.score))
        #expect(!node.hasBuiltIndex(.child("name")))
        #expect(!node.hasBuiltIndex(.value))
        // missing < false < true < numbers < strings < objects; ties (the four 3s) by key, integers first.
        #expect(Self.keys(node) == ["c", "g", "d", "f", "2", "10", "b", "i", "h", "a", "e"])
        #expect(Self.keys(node) == ReferenceOrder.sortedKeys(of: node, byChild: "score"))
        #expect(Self.keys(node, reverse: true) == Self.keys(node).reversed())
    }

    @Test func aNodeKeepsAtMostMaxPerNodeIndexesDroppingTheLeastRecentlyUsed() throws {
        let limit = IndexRetention.current.maxPerNode
        let names = (0...limit + 1).map { "f\($0)" }
        let fields = names.map { Path($0) }
        var children: [String: JSONValue] = [:]
        for key in ["a", "b", "c"] {
            children[key] = .object(Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.string(key)) }))
        }
        let node = try Node(json: .object(children))
        for field in fields { _ = Self.queried(node, .child(field)) }
        let built = fields.filter { node.hasBuiltIndex(.child($0)) }
        #expect(built == Array(fields.suffix(limit)))
        // A query keeps its index recent: the next one built drops another.
        _ = Self.queried(node, .child(fields[2]))
        _ = Self.queried(node, .child(fields[0]))
        #expect(node.hasBuiltIndex(.child(fields[2])) && node.hasBuiltIndex(.child(fields[0])))
        #expect(!node.hasBuiltIndex(.child(fields[3])))
        #expect(fields.filter { node.hasBuiltIndex(.child($0)) }.count == limit)
    }

    @Test func anIndexNoQueryUsedForItsLifetimeIsNotCarriedByUpdates() throws {
        let node = Self.queried(Self.mixed)
        let lifetime = IndexRetention.current.unusedLifetime
        let soon = try IndexRetention.$current.withValue(Self.retention(movedBy: lifetime - .seconds(1))) {
            node.updatingChild("z", to: try Node(json: ["score": 1]))
        }
        #expect(soon.hasBuiltIndex(Self.score))
        let later = try IndexRetention.$current.withValue(Self.retention(movedBy: lifetime + .seconds(1))) {
            node.updatingChild("z", to: try Node(json: ["score": 1]))
        }
        #expect(!later.hasBuiltIndex(Self.score))
        // Queried again, it is built again, in order.
        #expect(Self.keys(later).first == "c")
        #expect(later.hasBuiltIndex(Self.score))
    }

    /// The default policy, its clock moved forward by `offset`.
    static func retention(movedBy offset: Duration) -> IndexRetention {
        IndexRetention(now: { ContinuousClock.now + offset })
    }

    /// Two policies bound on two tasks at once (two servers in one process) each hold on their own.
    @Test func eachTaskFollowsThePolicyItBound() async throws {
        let names = (0..<4).map { "f\($0)" }
        var children: [String: JSONValue] = [:]
        for key in ["a", "b"] {
            children[key] = .object(Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.string(key)) }))
        }
        let json = JSONValue.object(children)
        let counts = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for limit in [1, 3] {
                group.addTask {
                    let node = try Node(json: json)
                    return IndexRetention.$current.withValue(IndexRetention(maxPerNode: limit)) {
                        for name in names { _ = Self.queried(node, .child(Path(name))) }
                        return (limit, names.filter { node.hasBuiltIndex(.child(Path($0))) }.count)
                    }
                }
            }
            var counts: [Int: Int] = [:]
            for try await (limit, count) in group { counts[limit] = count }
            return counts
        }
        #expect(counts == [1: 1, 3: 3])
    }

    @Test func changingAChildsScoreMovesItInTheCarriedIndex() throws {
        let node = Self.queried(Self.mixed)
        let moved = node.updatingChild("b", to: try Node(json: ["score": -10]))
        #expect(moved.hasBuiltIndex(Self.score))
        #expect(Self.keys(moved) == ["c", "g", "d", "b", "f", "2", "10", "i", "h", "a", "e"])
        #expect(Self.keys(moved) == ReferenceOrder.sortedKeys(of: moved, byChild: "score"))
        // The original is untouched.
        #expect(Self.keys(node) == ReferenceOrder.sortedKeys(of: node, byChild: "score"))
        #expect(node.child("b").child("score") == Node(.number(3)))
    }

    @Test func addingAndRemovingChildrenKeepsTheIndex() throws {
        let node = Self.queried(Self.mixed)
        let added = node.updatingChild("j", to: try Node(json: ["score": 2.5]))
        #expect(added.hasBuiltIndex(Self.score))
        #expect(Self.keys(added) == ["c", "g", "d", "f", "j", "2", "10", "b", "i", "h", "a", "e"])

        let removed = added.updatingChild("10", to: .empty).updatingChild("c", to: .empty)
        #expect(removed.hasBuiltIndex(Self.score))
        #expect(Self.keys(removed) == ["g", "d", "f", "j", "2", "b", "i", "h", "a", "e"])
        #expect(Self.keys(removed) == ReferenceOrder.sortedKeys(of: removed, byChild: "score"))
        #expect(Self.keys(removed, reverse: true) == Self.keys(removed).reversed())
    }

    @Test func deepChangesOfTheIndexedValueMoveTheChild() {
        let node = Self.queried(Self.mixed)
        let raised = node.updating(at: "g/score", to: Node(.string("zz")))
        #expect(raised.hasBuiltIndex(Self.score))
        #expect(Self.keys(raised) == ["c", "d", "f", "2", "10", "b", "i", "h", "a", "g", "e"])

        // Removing the score makes the child sort with the missing ones (by key among them).
        let cleared = raised.updating(at: "a/score", to: .empty)
        #expect(cleared.hasBuiltIndex(Self.score))
        #expect(Self.keys(cleared) == ["a", "c", "d", "f", "2", "10", "b", "i", "h", "g", "e"])

        // A deep change elsewhere in a child keeps its place but the index holds the new child.
        let renamed = cleared.updating(at: "b/name", to: Node(.string("bee")))
        #expect(renamed.hasBuiltIndex(Self.score))
        #expect(Self.keys(renamed) == Self.keys(cleared))
        let b = renamed.children(in: Self.score).first { $0.name == "b" }
        #expect(b?.node.child("name") == Node(.string("bee")))
    }

    @Test func aNestedIndexPathIsMaintainedThroughDeepWrites() throws {
        let nested = Index.child("meta/rank")
        let node = Self.queried(
            try Node(json: ["a": ["meta": ["rank": 2]], "b": ["meta": ["rank": 1]], "c": ["meta": ["rank": 3]]]), nested
        )
        let updated = node.updating(at: "c/meta/rank", to: Node(.number(0)))
            .updating(at: "d/meta/rank", to: Node(.number(1.5)))
        #expect(updated.hasBuiltIndex(nested))
        #expect(Self.keys(updated, nested) == ["c", "b", "d", "a"])
        #expect(Self.keys(updated, nested) == ReferenceOrder.sortedKeys(of: updated, byChild: "meta/rank"))
    }

    @Test func iteratingFromAPostStartsAtTheRightChildOfAnUpdatedNode() throws {
        let node = Self.queried(Self.mixed).updatingChild("k", to: try Node(json: ["score": 3]))
        let post = Self.score.makePost(Node(.number(3)), name: "b")
        #expect(node.children(in: Self.score, from: post).map(\.name.string) == ["b", "i", "k", "h", "a", "e"])
        #expect(
            node.children(in: Self.score, from: post, reverse: true).map(\.name.string)
                == ["b", "10", "2", "f", "d", "g", "c"])
    }

    // MARK: Random updates

    enum Edit: CustomStringConvertible {
        case setScore(key: Int, score: Int?)
        case setName(key: Int, name: Int)
        case remove(key: Int)

        var description: String {
            switch self {
            case .setScore(let key, let score): "\(key)/score=\(score.map(String.init) ?? "null")"
            case .setName(let key, let name): "\(key)/name=\(name)"
            case .remove(let key): "-\(key)"
            }
        }
    }

    static let keyNames = ["1", "2", "10", "a", "b", "c", "d", "e", "f", "g"]

    static let edits = zip(Gen.int(in: 0...9), Gen.int(in: 0...9), Gen.int(in: -1...6))
        .map { kind, key, value -> Edit in
            switch kind {
            case 0...5: .setScore(key: key, score: value < 0 ? nil : value)
            case 6...7: .setName(key: key, name: value)
            default: .remove(key: key)
            }
        }
        .array(of: 1...60)

    @Test func randomEditsKeepTheIndexBuiltAndSorted() async {
        await propertyCheck(count: 100, input: Self.edits) { edits in
            var node = Self.queried(Self.mixed)
            for edit in edits {
                switch edit {
                case .setScore(let key, let score):
                    let value = score.map { Node(.number(Double($0))) } ?? .empty
                    node = node.updating(at: Path(keys: [ChildKey(Self.keyNames[key]), "score"]), to: value)
                case .setName(let key, let name):
                    node = node.updating(
                        at: Path(keys: [ChildKey(Self.keyNames[key]), "name"]), to: Node(.number(Double(name))))
                case .remove(let key):
                    node = node.updatingChild(ChildKey(Self.keyNames[key]), to: .empty)
                }
                if node.isEmpty { break }
                #expect(node.hasBuiltIndex(Self.score), "after \(edit)")
                let keys = Self.keys(node)
                #expect(keys == ReferenceOrder.sortedKeys(of: node, byChild: "score"), "after \(edit)")
                #expect(Self.keys(node, reverse: true) == keys.reversed(), "after \(edit)")
                // The index holds the current children, not stale copies.
                for child in node.children(in: Self.score) where child.node != node.child(child.name) {
                    Issue.record("stale child \(child.name) after \(edit)")
                }
            }
        }
    }
}
