import Query
import Testing
import Tree

/// The events of one operation come as every `child_removed`, then `child_added`, `child_moved`,
/// `child_changed`, and last `value`; each kind in the query's order with the right `prevName`;
/// and `value` only once the view holds all its data.
struct EventOrderTests {
    /// An event reduced to what a listener sees of its order: type, child and predecessor.
    struct Seen: Equatable, CustomStringConvertible {
        var type: EventType
        var child: String?
        var prev: String?

        init(_ type: EventType, _ child: String? = nil, after prev: String? = nil) {
            self.type = type
            self.child = child
            self.prev = prev
        }

        init(_ change: Change) {
            self.init(change.type, change.childName?.string, after: change.prevName?.string)
        }

        var description: String { "\(type.rawValue) \(child ?? "") \(prev.map { "after \($0)" } ?? "")" }
    }

    static let byScore = try! QueryParams().ordered(by: .child("score"))

    static func view(_ params: QueryParams, complete: Bool, data: Node = .empty) -> View {
        let server = CacheNode(node: data, isFullyInitialized: complete, isFiltered: false)
        return View(params: params, initialCache: ViewCache(eventCache: server, serverCache: server))
    }

    static func server(_ path: Path, _ json: JSONValue) throws -> Operation {
        .overwrite(source: .server, path: path, node: try Node(json: json))
    }

    @Test func oneOperationRaisesRemovedAddedMovedChangedThenValue() throws {
        // In key order a…g; in score order a b g d f e c.
        let old = try Node(
            json: [
                "a": ["score": 1], "b": ["score": 2], "c": ["score": 7], "d": ["score": 4],
                "e": ["score": 6, "x": 0], "f": ["score": 5, "x": 0], "g": ["score": 3],
            ])
        // c and g go, z and h come, a and b move to the end (b before a), e and f change in place.
        let new = try Node(
            json: [
                "a": ["score": 10], "b": ["score": 8], "d": ["score": 4],
                "e": ["score": 6, "x": 1], "f": ["score": 5, "x": 1], "h": ["score": 4.5], "z": ["score": 0],
            ])
        var view = Self.view(Self.byScore, complete: true, data: old)
        let events = view.apply(
            .overwrite(source: .server, path: .root, node: new), writes: NoPendingWrites(), completeServerCache: nil)
        // New order: z d h f e b a.
        #expect(
            events.map(Seen.init) == [
                Seen(.childRemoved, "g"), Seen(.childRemoved, "c"),
                Seen(.childAdded, "z"), Seen(.childAdded, "h", after: "d"),
                Seen(.childMoved, "b", after: "e"), Seen(.childMoved, "a", after: "b"),
                Seen(.childChanged, "f", after: "h"), Seen(.childChanged, "e", after: "f"),
                Seen(.childChanged, "b", after: "e"), Seen(.childChanged, "a", after: "b"),
                Seen(.value),
            ])
        #expect(events.last?.node == new)
        let removed = events.filter { $0.type == .childRemoved }
        #expect(removed.map(\.node) == [old.child("g"), old.child("c")])
        let changed = events.filter { $0.type == .childChanged }
        #expect(changed.map(\.oldNode) == [old.child("f"), old.child("e"), old.child("b"), old.child("a")])
        #expect(changed.map(\.node) == [new.child("f"), new.child("e"), new.child("b"), new.child("a")])
    }

    @Test func aFullWindowEvictsBeforeItAdmits() throws {
        let params = try Self.byScore.limited(toFirst: 2)
        var view = Self.view(params, complete: false)
        _ = view.apply(
            try Self.server(.root, ["a": ["score": 1], "b": ["score": 2], "c": ["score": 3]]),
            writes: NoPendingWrites(), completeServerCache: nil)
        let events = view.apply(try Self.server("d", ["score": 0]), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(events.map(Seen.init) == [Seen(.childRemoved, "b"), Seen(.childAdded, "d"), Seen(.value)])
        // The evicted child's place is refilled when a child inside leaves.
        let refill = view.apply(try Self.server("a", nil), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(refill.map(Seen.init) == [Seen(.childRemoved, "a"), Seen(.childAdded, "b", after: "d"), Seen(.value)])
    }

    @Test func noValueEventUntilTheViewIsComplete() throws {
        var view = Self.view(Self.byScore, complete: false)
        let first = view.apply(try Self.server("b", ["score": 2]), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(first.map(Seen.init) == [Seen(.childAdded, "b")])
        let second = view.apply(try Self.server("a", ["score": 3]), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(second.map(Seen.init) == [Seen(.childAdded, "a", after: "b")])
        #expect(view.completeEventNode == nil)

        let complete = view.apply(
            .listenComplete(source: .server, path: .root), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(complete.map(Seen.init) == [Seen(.value)])
        #expect(complete.first?.node == (try Node(json: ["a": ["score": 3], "b": ["score": 2]])))

        // From now on every change ends with a value event.
        let change = view.apply(try Self.server("b/score", 4), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(
            change.map(Seen.init) == [
                Seen(.childMoved, "b", after: "a"), Seen(.childChanged, "b", after: "a"), Seen(.value),
            ]
        )
    }

    @Test func aFullOverwriteCompletesTheViewAtOnce() throws {
        var view = Self.view(Self.byScore, complete: false)
        _ = view.apply(try Self.server("b", ["score": 2]), writes: NoPendingWrites(), completeServerCache: nil)
        let events = view.apply(
            try Self.server(.root, ["b": ["score": 2], "c": ["score": 1]]), writes: NoPendingWrites(),
            completeServerCache: nil)
        #expect(events.map(Seen.init) == [Seen(.childAdded, "c"), Seen(.value)])
        // An empty location is complete too: listeners learn it holds nothing.
        var empty = Self.view(Self.byScore, complete: false)
        let none = empty.apply(try Self.server(.root, nil), writes: NoPendingWrites(), completeServerCache: nil)
        #expect(none.map(Seen.init) == [Seen(.value)])
        #expect(none.first?.node == .empty)
    }

    @Test func aNewListenerGetsChildrenInQueryOrderThenValueOnlyWhenComplete() throws {
        let data = try Node(json: ["a": ["score": 3], "b": ["score": 1], "c": ["score": 2]])
        let complete = Self.view(Self.byScore, complete: true, data: data)
        #expect(
            complete.initialEvents().map(Seen.init) == [
                Seen(.childAdded, "b"), Seen(.childAdded, "c", after: "b"), Seen(.childAdded, "a", after: "c"),
                Seen(.value),
            ])
        let partial = Self.view(Self.byScore, complete: false, data: data)
        #expect(!partial.initialEvents().contains { $0.type == .value })
        #expect(partial.initialEvents().count == 3)
    }
}
