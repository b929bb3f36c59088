import Query
import Testing
import Tree

@testable import CanopyServer

/// The listener index a write consults for the listeners above, at and below it.
struct ListenerTreeTests {
    final class Recorder: Subscriber {
        let subscriberID = SubscriberIDs.make()
        func deliver(_ push: Push) {}
        func revoke(path: Path, params: QueryParams) {}
        func end() {}
    }

    static func listener(
        _ subscriber: Recorder, _ path: Path, query: String = "default", dependsOnData: Bool = false
    ) -> Listener {
        Listener(
            subscriber: subscriber, path: path, queryID: query, params: .default, tag: nil, caller: .unauthenticated,
            view: nil, dependsOnData: dependsOnData)
    }

    /// The listens checked again after writes are exactly those added as depending on the data,
    /// whichever way they leave.
    @Test func theListensThatDependOnDataAreIndexedUntilTheyGo() {
        var tree = ListenerTree()
        let (ada, bob) = (Recorder(), Recorder())
        tree.add(Self.listener(ada, "rooms/a", dependsOnData: true))
        tree.add(Self.listener(ada, "users/ada"))
        tree.add(Self.listener(bob, "rooms/b", dependsOnData: true))
        #expect(Set(tree.dataDependentListeners().map(\.path)) == ["rooms/a", "rooms/b"])

        tree.remove(subscriberID: ada.subscriberID, path: "rooms/a", queryID: "default")
        #expect(tree.dataDependentListeners().map(\.path) == ["rooms/b"])
        // Replaced by a listen the rules allow whatever the data: no longer checked.
        tree.add(Self.listener(bob, "rooms/b"))
        #expect(!tree.hasDataDependent)
        tree.add(Self.listener(bob, "rooms/c", dependsOnData: true))
        #expect(tree.hasDataDependent)
        tree.removeAll(subscriberID: bob.subscriberID)
        #expect(!tree.hasDataDependent)
        #expect(tree.count == 1)
    }

    static func subscribers(atOrAbove path: Path, in tree: ListenerTree) -> [Int] {
        var ids: [Int] = []
        tree.forEachAtOrAbove(path) { _, listener in ids.append(listener.subscriber.subscriberID) }
        return ids.sorted()
    }

    @Test func aDisconnectRemovesExactlyItsOwnListens() {
        var tree = ListenerTree()
        let (leaving, staying) = (Recorder(), Recorder())
        tree.add(Self.listener(leaving, "a/b"))
        tree.add(Self.listener(leaving, "a/b", query: "{\"l\":1}"))
        tree.add(Self.listener(leaving, "c"))
        tree.add(Self.listener(staying, "a/b"))
        tree.add(Self.listener(staying, "a"))
        #expect(tree.count == 5)

        #expect(tree.removeAll(subscriberID: leaving.subscriberID) == 3)
        #expect(tree.count == 2)
        #expect(Self.subscribers(atOrAbove: "a/b/x", in: tree) == [staying.subscriberID, staying.subscriberID])
        #expect(Self.subscribers(atOrAbove: "c", in: tree).isEmpty)
        #expect(!tree.hasListeners(below: "c") && !tree.hasListeners(below: "a/b"))
        // A second disconnect of the same subscriber finds nothing.
        #expect(tree.removeAll(subscriberID: leaving.subscriberID) == 0)
    }

    @Test func anUnlistenIsForgottenByTheDisconnectThatFollows() {
        var tree = ListenerTree()
        let subscriber = Recorder()
        tree.add(Self.listener(subscriber, "a"))
        tree.add(Self.listener(subscriber, "b"))
        #expect(tree.remove(subscriberID: subscriber.subscriberID, path: "a", queryID: "default") != nil)
        // Listening again at "a" after the unlisten is a new listen, removed with the rest.
        tree.add(Self.listener(subscriber, "a"))
        #expect(tree.removeAll(subscriberID: subscriber.subscriberID) == 2)
        #expect(tree.count == 0)
        #expect(!tree.hasListeners(below: .root))
    }

    @Test func listenersAreUpdatedInPlaceWhileVisited() {
        var tree = ListenerTree()
        let subscribers = (0..<100).map { _ in Recorder() }
        for subscriber in subscribers { tree.add(Self.listener(subscriber, "room")) }
        tree.forEachAtOrAbove("room/message") { _, listener in listener = Self.listener(Recorder(), "elsewhere") }
        // Every one of them was replaced once, none skipped or visited twice.
        var paths: [String] = []
        tree.forEachAtOrAbove("room") { _, listener in paths.append(listener.path.wireString) }
        #expect(paths.count == 100 && paths.allSatisfy { $0 == "elsewhere" })
    }
}
