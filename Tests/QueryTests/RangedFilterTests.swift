import Query
import Testing
import Tree

/// `startAt` / `endAt` / `startAfter` / `endBefore` / `equalTo` select exactly the children between
/// their bounds in the query's order, on every index, whether the data arrives whole or child by child.
struct RangedFilterTests {
    static let scores: Node = try! Node(
        json: [
            "a": ["score": 1],
            "b": ["score": 2],
            "c": ["score": 2],
            "d": ["score": 3],
            "e": ["name": "no score"],
            "f": ["score": "x"],
            "g": ["score": true],
            "h": ["score": ["deep": 1]],
        ])

    static let values: Node = try! Node(json: ["a": 3, "b": 1, "c": "x", "d": true, "e": 2, "f": 1])

    static let priorities: Node = try! Node(
        json: [
            "a": [".value": 1, ".priority": 10],
            "b": [".value": 1, ".priority": 5],
            "c": [".value": 1, ".priority": "m"],
            "d": 1,
            "e": [".value": 1, ".priority": 5],
        ])

    static let keyed: Node = try! Node(json: ["1": 1, "2": 1, "10": 1, "a": 1, "b": 1, "c": 1])

    static func number(_ value: Double) -> Node { Node(.number(value)) }
    static func string(_ value: String) -> Node { Node(.string(value)) }

    static func view(_ params: QueryParams) -> View {
        let unknown = CacheNode(node: .empty, isFullyInitialized: false, isFiltered: false)
        return View(params: params, initialCache: ViewCache(eventCache: unknown, serverCache: unknown))
    }

    static func serverOverwrite(_ view: inout View, _ path: Path, _ node: Node) {
        _ = view.apply(
            .overwrite(source: .server, path: path, node: node), writes: NoPendingWrites(), completeServerCache: nil)
    }

    /// The keys the query shows, in its order, when `data` arrives in one piece and when it arrives
    /// one child at a time; records an issue when the two differ.
    static func selected(
        _ params: QueryParams, from data: Node, sourceLocation: SourceLocation = #_sourceLocation
    )
        -> [String]
    {
        var whole = view(params)
        serverOverwrite(&whole, .root, data)
        var pieces = view(params)
        serverOverwrite(&pieces, .root, .empty)
        for child in data.children(in: .key) { serverOverwrite(&pieces, Path(keys: [child.name]), child.node) }
        let keys = (whole.completeEventNode ?? .empty).children(in: params.index).map(\.name.string)
        let incremental = (pieces.completeEventNode ?? .empty).children(in: params.index).map(\.name.string)
        #expect(keys == incremental, "\(params): whole vs child by child", sourceLocation: sourceLocation)
        if let node = whole.completeEventNode {
            for key in keys {
                #expect(
                    node.child(ChildKey(key)) == data.child(ChildKey(key)), "\(params): \(key) holds its data",
                    sourceLocation: sourceLocation)
            }
        }
        return keys
    }

    // MARK: Child index

    @Test func childIndexBoundsFollowValueOrderThenKey() throws {
        let byScore = try QueryParams().ordered(by: .child("score"))
        let data = Self.scores
        #expect(Self.selected(byScore, from: data) == ["e", "g", "a", "b", "c", "d", "f", "h"])
        #expect(Self.selected(try byScore.starting(at: Self.number(2)), from: data) == ["b", "c", "d", "f", "h"])
        #expect(Self.selected(try byScore.ending(at: Self.number(2)), from: data) == ["e", "g", "a", "b", "c"])
        #expect(Self.selected(try byScore.starting(after: Self.number(2)), from: data) == ["d", "f", "h"])
        #expect(Self.selected(try byScore.ending(before: Self.number(2)), from: data) == ["e", "g", "a"])
        #expect(
            Self.selected(try byScore.starting(at: Self.number(2)).ending(at: Self.number(2)), from: data)
                == ["b", "c"])
        #expect(
            Self.selected(try byScore.ending(at: Self.string("z")), from: data) == ["e", "g", "a", "b", "c", "d", "f"])
        #expect(Self.selected(try byScore.starting(at: Self.string("a")), from: data) == ["f", "h"])
        #expect(
            Self.selected(try byScore.starting(at: .empty), from: data) == ["e", "g", "a", "b", "c", "d", "f", "h"])
    }

    @Test func aKeyNameBreaksTiesAtTheBoundValue() throws {
        let byScore = try QueryParams().ordered(by: .child("score"))
        let data = Self.scores
        #expect(Self.selected(try byScore.starting(at: Self.number(2), key: "c"), from: data) == ["c", "d", "f", "h"])
        #expect(Self.selected(try byScore.ending(at: Self.number(2), key: "b"), from: data) == ["e", "g", "a", "b"])
        #expect(
            Self.selected(try byScore.starting(after: Self.number(2), key: "b"), from: data) == ["c", "d", "f", "h"])
        #expect(
            Self.selected(try byScore.ending(before: Self.number(2), key: "c"), from: data) == ["e", "g", "a", "b"])
        // A key between the tied children: "bb" sorts after "b" and before "c".
        #expect(Self.selected(try byScore.starting(at: Self.number(2), key: "bb"), from: data) == ["c", "d", "f", "h"])
        #expect(Self.selected(try byScore.ending(at: Self.number(2), key: "bb"), from: data) == ["e", "g", "a", "b"])
    }

    @Test func equalToSelectsOneIndexedValue() throws {
        let byScore = try QueryParams().ordered(by: .child("score"))
        let data = Self.scores
        #expect(Self.selected(try byScore.equal(to: Self.number(2)), from: data) == ["b", "c"])
        #expect(Self.selected(try byScore.equal(to: Self.number(2), key: "c"), from: data) == ["c"])
        #expect(Self.selected(try byScore.equal(to: Node(.bool(true))), from: data) == ["g"])
        #expect(Self.selected(try byScore.equal(to: Self.string("x")), from: data) == ["f"])
        #expect(Self.selected(try byScore.equal(to: Self.number(7)), from: data) == [])
        // equalTo(null): the children that have no score.
        #expect(Self.selected(try byScore.equal(to: .empty), from: data) == ["e"])
    }

    // MARK: Other indexes

    @Test func keyIndexBoundsAreKeysWithIntegersFirst() throws {
        let byKey = try QueryParams().ordered(by: .key)
        let data = Self.keyed
        #expect(Self.selected(byKey, from: data) == ["1", "2", "10", "a", "b", "c"])
        #expect(Self.selected(try byKey.starting(at: Self.string("b")), from: data) == ["b", "c"])
        #expect(Self.selected(try byKey.starting(at: Self.string("2")), from: data) == ["2", "10", "a", "b", "c"])
        #expect(Self.selected(try byKey.ending(at: Self.string("a")), from: data) == ["1", "2", "10", "a"])
        #expect(Self.selected(try byKey.starting(after: Self.string("a")), from: data) == ["b", "c"])
        #expect(Self.selected(try byKey.ending(before: Self.string("10")), from: data) == ["1", "2"])
        #expect(Self.selected(try byKey.equal(to: Self.string("10")), from: data) == ["10"])
        #expect(
            Self.selected(try byKey.starting(at: Self.string("2")).ending(at: Self.string("a")), from: data)
                == ["2", "10", "a"])
    }

    @Test func valueIndexBoundsCompareTheChildrenThemselves() throws {
        let byValue = try QueryParams().ordered(by: .value)
        let data = Self.values
        #expect(Self.selected(byValue, from: data) == ["d", "b", "f", "e", "a", "c"])
        #expect(Self.selected(try byValue.starting(at: Self.number(1)), from: data) == ["b", "f", "e", "a", "c"])
        #expect(Self.selected(try byValue.ending(at: Self.number(2)), from: data) == ["d", "b", "f", "e"])
        #expect(Self.selected(try byValue.starting(at: Self.number(1), key: "f"), from: data) == ["f", "e", "a", "c"])
        #expect(Self.selected(try byValue.starting(after: Self.number(1)), from: data) == ["e", "a", "c"])
        #expect(Self.selected(try byValue.ending(before: Self.number(2)), from: data) == ["d", "b", "f"])
        #expect(Self.selected(try byValue.equal(to: Self.number(1)), from: data) == ["b", "f"])
        #expect(Self.selected(try byValue.equal(to: Node(.bool(true))), from: data) == ["d"])
    }

    @Test func priorityIndexBoundsPutChildrenWithoutPriorityFirst() throws {
        let byPriority = QueryParams()
        let data = Self.priorities
        #expect(Self.selected(try byPriority.starting(at: Self.number(5)), from: data) == ["b", "e", "a", "c"])
        #expect(Self.selected(try byPriority.ending(at: Self.number(5)), from: data) == ["d", "b", "e"])
        #expect(Self.selected(try byPriority.starting(at: Self.number(5), key: "e"), from: data) == ["e", "a", "c"])
        #expect(Self.selected(try byPriority.starting(after: Self.number(5)), from: data) == ["a", "c"])
        #expect(Self.selected(try byPriority.ending(before: Self.number(10)), from: data) == ["d", "b", "e"])
        #expect(Self.selected(try byPriority.equal(to: Self.number(5)), from: data) == ["b", "e"])
        #expect(Self.selected(try byPriority.equal(to: .empty), from: data) == ["d"])
        #expect(Self.selected(try byPriority.starting(at: Self.string("a")), from: data) == ["c"])
    }

    // MARK: Children crossing a bound

    @Test func childrenCrossingABoundAreAddedAndRemoved() throws {
        let params = try QueryParams().ordered(by: .child("score")).starting(at: Self.number(2)).ending(
            at: Self.number(3))
        var view = Self.view(params)
        Self.serverOverwrite(&view, .root, Self.scores)
        #expect(view.completeEventNode?.children(in: params.index).map(\.name.string) == ["b", "c", "d"])

        let leaving = view.apply(
            .overwrite(source: .server, path: "b/score", node: Self.number(5)), writes: NoPendingWrites(),
            completeServerCache: nil)
        #expect(leaving.map(\.type) == [.childRemoved, .value])
        #expect(leaving.first?.childName == "b")

        let entering = view.apply(
            .overwrite(source: .server, path: "a/score", node: Self.number(3)), writes: NoPendingWrites(),
            completeServerCache: nil)
        #expect(entering.map(\.type) == [.childAdded, .value])
        #expect(entering.first?.childName == "a")
        #expect(entering.first?.prevName == "c")

        let outside = view.apply(
            .overwrite(source: .server, path: "h/score", node: Self.number(9)), writes: NoPendingWrites(),
            completeServerCache: nil)
        #expect(outside.isEmpty)
        #expect(view.completeEventNode?.children(in: params.index).map(\.name.string) == ["c", "a", "d"])
    }
}
