import Query
import SyncEngine
import Synchronization
import Testing
import Tree

/// The sync tree asks the server for exactly the listens its listeners need: one per location or
/// filtered query, none where a complete listen above already covers it; it routes tagged updates
/// to their query, cancels refused listens, and answers reads from cache only when it knows.
struct SyncTreeListenTests {
    /// Records every listen the sync tree starts or stops, in order.
    final class RecordingListenProvider: ListenProvider {
        enum Call: Hashable, CustomStringConvertible {
            case start(QuerySpec, tag: Int?)
            case stop(QuerySpec, tag: Int?)

            var description: String {
                switch self {
                case .start(let query, let tag): "start \(query) tag \(tag.map(String.init) ?? "-")"
                case .stop(let query, let tag): "stop \(query) tag \(tag.map(String.init) ?? "-")"
                }
            }
        }

        private let recorded = Mutex<[Call]>([])

        func startListening(_ query: QuerySpec, tag: Int?) { recorded.withLock { $0.append(.start(query, tag: tag)) } }
        func stopListening(_ query: QuerySpec, tag: Int?) { recorded.withLock { $0.append(.stop(query, tag: tag)) } }

        /// The calls since the last `take()`.
        func take() -> [Call] {
            recorded.withLock { calls in
                defer { calls.removeAll() }
                return calls
            }
        }
    }

    static let everything = Set(EventType.allCases)

    static func registration(_ id: Int, _ types: Set<EventType> = everything) -> EventRegistration {
        EventRegistration(id: id, types: types)
    }

    static func node(_ json: JSONValue) -> Node { try! Node(json: json) }

    static let firstByScore = try! QueryParams().ordered(by: .child("score")).limited(toFirst: 1)
    static let lastByScore = try! QueryParams().ordered(by: .child("score")).limited(toLast: 1)

    static func seen(_ events: [Event]) -> [String] {
        events.map { event in
            switch event {
            case .data(let registration, let path, let change):
                "#\(registration.id) \(change.type.rawValue) \(path) \(change.node)"
            case .cancel(let registration, let path, let error):
                "#\(registration.id) cancel \(path) \(error)"
            }
        }
    }

    // MARK: Starting listens

    @Test func theFirstListenerAtALocationStartsOneListen() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        #expect(provider.take() == [.start(QuerySpec(path: "a"), tag: nil)])
        _ = tree.addRegistration(Self.registration(2, [.value]), for: QuerySpec(path: "a"))
        #expect(provider.take() == [])
        // An ordering without range or limit is served by the same listen.
        let byScore = QuerySpec(path: "a", params: try! QueryParams().ordered(by: .child("score")))
        _ = tree.addRegistration(Self.registration(3), for: byScore)
        #expect(provider.take() == [])
        #expect(tree.tag(for: byScore) == nil)
    }

    @Test func anOrderingWithoutRangeOrLimitListensToTheWholeLocation() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let byScore = QuerySpec(path: "a", params: try! QueryParams().ordered(by: .child("score")))
        _ = tree.addRegistration(Self.registration(1), for: byScore)
        #expect(provider.take() == [.start(QuerySpec(path: "a"), tag: nil)])
    }

    @Test func listenersBelowACompleteListenStartNone() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        _ = provider.take()
        _ = tree.addRegistration(Self.registration(2), for: QuerySpec(path: "a/b"))
        _ = tree.addRegistration(Self.registration(3), for: QuerySpec(path: "a/c/d", params: Self.firstByScore))
        #expect(provider.take() == [])
    }

    @Test func aSecondListenerAtTheSameFilteredQueryStartsNone() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let query = QuerySpec(path: "a", params: Self.firstByScore)
        _ = tree.addRegistration(Self.registration(1), for: query)
        let tag = tree.tag(for: query)
        #expect(tag != nil)
        #expect(provider.take() == [.start(query, tag: tag)])
        _ = tree.addRegistration(Self.registration(2), for: query)
        #expect(provider.take() == [])
        #expect(tree.tag(for: query) == tag)
    }

    @Test func aCompleteListenAboveReplacesFilteredListensBelowAndBack() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let first = QuerySpec(path: "a/b", params: Self.firstByScore)
        let last = QuerySpec(path: "a/c", params: Self.lastByScore)
        let plain = QuerySpec(path: "a/d")
        _ = tree.addRegistration(Self.registration(1), for: first)
        _ = tree.addRegistration(Self.registration(2), for: last)
        _ = tree.addRegistration(Self.registration(3), for: plain)
        let (firstTag, lastTag) = (tree.tag(for: first), tree.tag(for: last))
        #expect(
            provider.take() == [.start(first, tag: firstTag), .start(last, tag: lastTag), .start(plain, tag: nil)])

        _ = tree.addRegistration(Self.registration(4), for: QuerySpec(path: "a"))
        let calls = provider.take()
        #expect(calls.first == .start(QuerySpec(path: "a"), tag: nil))
        let stops: Set<RecordingListenProvider.Call> = [
            .stop(first, tag: firstTag), .stop(last, tag: lastTag), .stop(plain, tag: nil),
        ]
        #expect(Set(calls.dropFirst()) == stops)
        #expect(calls.count == 4)

        // Without the complete listen, the listens below are needed again.
        _ = tree.removeRegistration(Self.registration(4), for: QuerySpec(path: "a"))
        let restored = provider.take()
        #expect(restored.last == .stop(QuerySpec(path: "a"), tag: nil))
        let starts: Set<RecordingListenProvider.Call> = [
            .start(first, tag: firstTag), .start(last, tag: lastTag), .start(plain, tag: nil),
        ]
        #expect(Set(restored.dropLast()) == starts)
        #expect(restored.count == 4)
    }

    // MARK: Stopping listens

    @Test func removingTheLastListenerStopsTheListen() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        _ = tree.addRegistration(Self.registration(2), for: QuerySpec(path: "a"))
        _ = provider.take()
        _ = tree.removeRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        #expect(provider.take() == [])
        _ = tree.removeRegistration(Self.registration(2), for: QuerySpec(path: "a"))
        #expect(provider.take() == [.stop(QuerySpec(path: "a"), tag: nil)])
        // The listener is gone: server data no longer reaches it.
        #expect(tree.applyServerOverwrite(Node(.number(1)), at: "a").isEmpty)
    }

    @Test func removingTheLastListenerOfAFilteredQueryStopsItsTaggedListen() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let query = QuerySpec(path: "a", params: Self.firstByScore)
        _ = tree.addRegistration(Self.registration(1), for: query)
        let tag = tree.tag(for: query)
        _ = provider.take()
        _ = tree.removeRegistration(Self.registration(1), for: query)
        #expect(provider.take() == [.stop(query, tag: tag)])
        #expect(tree.tag(for: query) == nil)
    }

    // MARK: Tagged queries

    @Test func filteredQueriesGetDistinctTagsAndOnlyTheirOwnUpdates() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let first = QuerySpec(path: "a", params: Self.firstByScore)
        let last = QuerySpec(path: "a", params: Self.lastByScore)
        _ = tree.addRegistration(Self.registration(1), for: first)
        _ = tree.addRegistration(Self.registration(2), for: last)
        guard let firstTag = tree.tag(for: first), let lastTag = tree.tag(for: last) else {
            Issue.record("filtered queries have tags")
            return
        }
        #expect(firstTag != lastTag)
        #expect(provider.take() == [.start(first, tag: firstTag), .start(last, tag: lastTag)])
        #expect(tree.tag(for: QuerySpec(path: "a")) == nil)

        let low = tree.applyTaggedOverwrite(Self.node(["p": ["score": 1]]), at: "a", tag: firstTag)
        #expect(Self.seen(low) == [#"#1 child_added /a/p {"score":1}"#, #"#1 value /a {"p":{"score":1}}"#])
        let high = tree.applyTaggedOverwrite(Self.node(["q": ["score": 9]]), at: "a", tag: lastTag)
        #expect(Self.seen(high) == [#"#2 child_added /a/q {"score":9}"#, #"#2 value /a {"q":{"score":9}}"#])
        // A tagged update below the query's location, too, reaches only its query.
        let deeper = tree.applyTaggedOverwrite(Node(.number(0)), at: "a/p/score", tag: firstTag)
        #expect(Set(deeper.map(\.registration.id)) == [1])
        #expect(tree.applyTaggedOverwrite(Node(.number(1)), at: "a", tag: 999).isEmpty)
    }

    // MARK: Refused listens

    @Test func aRefusedListenCancelsItsListenersWithoutAnUnlisten() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        _ = tree.addRegistration(Self.registration(2, [.value]), for: QuerySpec(path: "a"))
        _ = provider.take()
        let events = tree.listenCompleted(QuerySpec(path: "a"), status: "permission_denied")
        #expect(Self.seen(events) == ["#1 cancel /a permission_denied", "#2 cancel /a permission_denied"])
        #expect(provider.take() == [])
        #expect(tree.applyServerOverwrite(Node(.number(1)), at: "a").isEmpty)
    }

    @Test func aRefusedFilteredListenCancelsOnlyThatQuery() {
        let provider = RecordingListenProvider()
        var tree = SyncTree(listenProvider: provider)
        let query = QuerySpec(path: "a", params: Self.firstByScore)
        _ = tree.addRegistration(Self.registration(1), for: query)
        _ = tree.addRegistration(Self.registration(2), for: QuerySpec(path: "b"))
        let events = tree.listenCompleted(query, status: "permission_denied")
        #expect(Self.seen(events) == ["#1 cancel /a permission_denied"])
        let data = tree.applyServerOverwrite(Node(.number(1)), at: "b")
        #expect(Self.seen(data) == ["#2 value /b 1"])
    }

    @Test func anAcceptedListenOfAnEmptyLocationRaisesValueNull() {
        var tree = SyncTree(listenProvider: RecordingListenProvider())
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        #expect(Self.seen(tree.listenCompleted(QuerySpec(path: "a"), status: "ok")) == ["#1 value /a null"])
        let query = QuerySpec(path: "b", params: Self.firstByScore)
        _ = tree.addRegistration(Self.registration(2), for: query)
        #expect(Self.seen(tree.listenCompleted(query, status: "ok")) == ["#2 value /b null"])
    }

    // MARK: Reading from cache

    @Test func cachedValueAnswersOnlyWhenTheDataIsKnown() {
        var tree = SyncTree(listenProvider: RecordingListenProvider())
        #expect(tree.cachedValue(for: QuerySpec(path: "a")) == nil)
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a"))
        #expect(tree.cachedValue(for: QuerySpec(path: "a")) == nil)

        _ = tree.applyServerOverwrite(Self.node(["x": ["score": 2], "y": ["score": 1]]), at: "a")
        #expect(tree.cachedValue(for: QuerySpec(path: "a")) == Self.node(["x": ["score": 2], "y": ["score": 1]]))
        #expect(tree.cachedValue(for: QuerySpec(path: "a/x/score")) == Node(.number(2)))
        #expect(tree.cachedValue(for: QuerySpec(path: "a/missing")) == .empty)
        #expect(
            tree.cachedValue(for: QuerySpec(path: "a", params: Self.firstByScore)) == Self.node(["y": ["score": 1]]))
        // Pending writes are part of the answer.
        _ = tree.applyUserOverwrite(Node(.number(0)), at: "a/x/score", writeID: 0)
        #expect(tree.cachedValue(for: QuerySpec(path: "a/x")) == Self.node(["score": 0]))
    }

    @Test func cachedValueDoesNotGuessFromPartialData() {
        var tree = SyncTree(listenProvider: RecordingListenProvider())
        _ = tree.addRegistration(Self.registration(1), for: QuerySpec(path: "a/b"))
        _ = tree.applyServerOverwrite(Node(.number(1)), at: "a/b")
        #expect(tree.cachedValue(for: QuerySpec(path: "a/b")) == Node(.number(1)))
        // Only a/b is known, not the rest of a.
        #expect(tree.cachedValue(for: QuerySpec(path: "a")) == nil)
        // A filtered listen knows its window, not the whole location.
        let query = QuerySpec(path: "c", params: Self.firstByScore)
        _ = tree.addRegistration(Self.registration(2), for: query)
        let tag = tree.tag(for: query) ?? -1
        _ = tree.applyTaggedOverwrite(Self.node(["p": ["score": 1]]), at: "c", tag: tag)
        #expect(tree.cachedValue(for: QuerySpec(path: "c")) == nil)
    }

    @Test func cachedValueAnswersFromASetWithoutAnyListen() {
        var tree = SyncTree(listenProvider: RecordingListenProvider())
        _ = tree.applyUserOverwrite(Self.node(["k": "v"]), at: "w", writeID: 0)
        #expect(tree.cachedValue(for: QuerySpec(path: "w")) == Self.node(["k": "v"]))
        #expect(tree.cachedValue(for: QuerySpec(path: "w/k")) == Node(.string("v")))
    }
}
