import Query
import SyncEngine
import Synchronization
import Testing
import Tree

/// Local writes show at once (optimistically), survive their acknowledgement, and roll back to the
/// server's data when the server refuses them, with the events a listener needs to follow along.
struct SyncTreeWriteTests {
    final class SilentListenProvider: ListenProvider {
        func startListening(_ query: QuerySpec, tag: Int?) {}
        func stopListening(_ query: QuerySpec, tag: Int?) {}
    }

    static let everything = Set(EventType.allCases)

    static func node(_ json: JSONValue) -> Node { try! Node(json: json) }

    /// Events as `#id type /path json`, in delivery order.
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

    /// A tree listening to `/a` (registration 1, every event type) with `serverData` there.
    static func listening(to serverData: JSONValue) -> SyncTree {
        var tree = SyncTree(listenProvider: SilentListenProvider())
        _ = tree.addRegistration(EventRegistration(id: 1, types: everything), for: QuerySpec(path: "a"))
        _ = tree.applyServerOverwrite(node(serverData), at: "a")
        return tree
    }

    static func value(_ tree: SyncTree, at path: Path) -> Node? { tree.cachedValue(for: QuerySpec(path: path)) }

    // MARK: Sets

    @Test func aSetRaisesEventsAtOnceAndTheAckKeepsTheData() {
        var tree = Self.listening(to: ["x": 1])
        let set = tree.applyUserOverwrite(Node(.number(2)), at: "a/y", writeID: 0)
        #expect(Self.seen(set) == [#"#1 child_added /a/y 2"#, #"#1 value /a {"x":1,"y":2}"#])
        // The server echoes the write to listeners, then acknowledges it: nothing new to tell.
        #expect(tree.applyServerOverwrite(Node(.number(2)), at: "a/y").isEmpty)
        #expect(tree.ackUserWrite(writeID: 0).isEmpty)
        #expect(tree.pendingWrites.allWrites.isEmpty)
        #expect(Self.value(tree, at: "a") == Self.node(["x": 1, "y": 2]))
    }

    @Test func aSetShowsBeforeAnyServerData() {
        var tree = SyncTree(listenProvider: SilentListenProvider())
        let initial = tree.addRegistration(EventRegistration(id: 1, types: Self.everything), for: QuerySpec(path: "a"))
        #expect(initial.isEmpty)
        let set = tree.applyUserOverwrite(Self.node(["b": true]), at: "a", writeID: 0)
        #expect(Self.seen(set) == [#"#1 child_added /a/b true"#, #"#1 value /a {"b":true}"#])
        // A listener added below the write gets its data from the write alone.
        let below = tree.addRegistration(EventRegistration(id: 2, types: [.value]), for: QuerySpec(path: "a/b"))
        #expect(Self.seen(below) == [#"#2 value /a/b true"#])
    }

    @Test func aRevertedSetRestoresTheServerData() {
        var tree = Self.listening(to: ["x": 1])
        _ = tree.applyUserOverwrite(Node(.number(5)), at: "a/x", writeID: 0)
        _ = tree.applyUserOverwrite(Node(.number(6)), at: "a/z", writeID: 1)
        #expect(Self.value(tree, at: "a") == Self.node(["x": 5, "z": 6]))

        let changed = tree.ackUserWrite(writeID: 0, revert: true)
        #expect(Self.seen(changed) == [#"#1 child_changed /a/x 1"#, #"#1 value /a {"x":1,"z":6}"#])
        let removed = tree.ackUserWrite(writeID: 1, revert: true)
        #expect(Self.seen(removed) == [#"#1 child_removed /a/z 6"#, #"#1 value /a {"x":1}"#])
        #expect(tree.pendingWrites.allWrites.isEmpty)
    }

    @Test func revertingAnEarlierOverlappingSetKeepsTheLaterOneVisible() {
        var tree = Self.listening(to: ["x": 0])
        _ = tree.applyUserOverwrite(Self.node(["b": 1, "c": 1]), at: "a", writeID: 0)
        let second = tree.applyUserOverwrite(Node(.number(2)), at: "a/b", writeID: 1)
        #expect(Self.seen(second) == [#"#1 child_changed /a/b 2"#, #"#1 value /a {"b":2,"c":1}"#])

        let reverted = tree.ackUserWrite(writeID: 0, revert: true)
        #expect(
            Self.seen(reverted) == [
                #"#1 child_removed /a/c 1"#, #"#1 child_added /a/x 0"#, #"#1 value /a {"b":2,"x":0}"#,
            ])
        #expect(Self.value(tree, at: "a") == Self.node(["b": 2, "x": 0]))
    }

    @Test func revertingASetHiddenUnderALaterOneRaisesNothing() {
        var tree = Self.listening(to: ["x": 0])
        _ = tree.applyUserOverwrite(Node(.number(1)), at: "a/x", writeID: 0)
        _ = tree.applyUserOverwrite(Self.node(["y": 2]), at: "a", writeID: 1)
        #expect(tree.ackUserWrite(writeID: 0, revert: true).isEmpty)
        #expect(Self.value(tree, at: "a") == Self.node(["y": 2]))
        // Reverting the covering write shows the server data again.
        let reverted = tree.ackUserWrite(writeID: 1, revert: true)
        #expect(
            Self.seen(reverted) == [#"#1 child_removed /a/y 2"#, #"#1 child_added /a/x 0"#, #"#1 value /a {"x":0}"#])
    }

    @Test func serverDataUnderAPendingSetShowsOnlyOnceTheSetIsReverted() {
        var tree = Self.listening(to: ["x": 1])
        _ = tree.applyUserOverwrite(Node(.number(5)), at: "a/x", writeID: 0)
        #expect(tree.applyServerOverwrite(Node(.number(2)), at: "a/x").isEmpty)
        // Around the write, server data shows as usual.
        let around = tree.applyServerOverwrite(Self.node(["x": 3, "y": 3]), at: "a")
        #expect(Self.seen(around) == [#"#1 child_added /a/y 3"#, #"#1 value /a {"x":5,"y":3}"#])
        let reverted = tree.ackUserWrite(writeID: 0, revert: true)
        #expect(Self.seen(reverted) == [#"#1 child_changed /a/x 3"#, #"#1 value /a {"x":3,"y":3}"#])
    }

    @Test func localWritesMoveChildrenInAndOutOfALimitedWindow() throws {
        var tree = SyncTree(listenProvider: SilentListenProvider())
        let topTwo = QuerySpec(
            path: "a", params: try QueryParams().ordered(by: .child("score")).limited(toLast: 2))
        _ = tree.addRegistration(EventRegistration(id: 1, types: [.value]), for: QuerySpec(path: "a"))
        _ = tree.addRegistration(EventRegistration(id: 2, types: Self.everything), for: topTwo)
        _ = tree.applyServerOverwrite(
            Self.node(["p": ["score": 1], "q": ["score": 2], "r": ["score": 3]]), at: "a")
        #expect(tree.cachedValue(for: topTwo) == Self.node(["q": ["score": 2], "r": ["score": 3]]))

        func windowEvents(_ events: [Event]) -> [String] { Self.seen(events.filter { $0.registration.id == 2 }) }
        // Deleting a child of the window refills it from the data outside.
        #expect(
            windowEvents(tree.applyUserOverwrite(.empty, at: "a/r", writeID: 0)) == [
                #"#2 child_removed /a/r {"score":3}"#, #"#2 child_added /a/p {"score":1}"#,
                #"#2 value /a {"p":{"score":1},"q":{"score":2}}"#,
            ])
        // A new child with a higher score pushes the lowest one out.
        #expect(
            windowEvents(tree.applyUserOverwrite(Self.node(["score": 9]), at: "a/s", writeID: 1)) == [
                #"#2 child_removed /a/p {"score":1}"#, #"#2 child_added /a/s {"score":9}"#,
                #"#2 value /a {"q":{"score":2},"s":{"score":9}}"#,
            ])
        // Refused writes undo both, in reverse.
        #expect(
            windowEvents(tree.ackUserWrite(writeID: 1, revert: true)) == [
                #"#2 child_removed /a/s {"score":9}"#, #"#2 child_added /a/p {"score":1}"#,
                #"#2 value /a {"p":{"score":1},"q":{"score":2}}"#,
            ])
        #expect(
            windowEvents(tree.ackUserWrite(writeID: 0, revert: true)) == [
                #"#2 child_removed /a/p {"score":1}"#, #"#2 child_added /a/r {"score":3}"#,
                #"#2 value /a {"q":{"score":2},"r":{"score":3}}"#,
            ])
    }

    @Test func revertingALaterSetShowsTheEarlierPendingSetAgain() {
        var tree = Self.listening(to: ["x": 1])
        _ = tree.applyUserOverwrite(Node(.number(2)), at: "a/x", writeID: 0)
        _ = tree.applyUserOverwrite(Node(.number(3)), at: "a/x", writeID: 1)
        let reverted = tree.ackUserWrite(writeID: 1, revert: true)
        #expect(Self.seen(reverted) == [#"#1 child_changed /a/x 2"#, #"#1 value /a {"x":2}"#])
        #expect(Self.value(tree, at: "a") == Self.node(["x": 2]))
        // The same from a listener below the write, and for a set over the whole location.
        _ = tree.addRegistration(EventRegistration(id: 2, types: [.value]), for: QuerySpec(path: "a/x"))
        _ = tree.applyUserOverwrite(Self.node(["x": 4]), at: "a", writeID: 2)
        _ = tree.applyUserOverwrite(Self.node(["x": 5]), at: "a", writeID: 3)
        let again = tree.ackUserWrite(writeID: 3, revert: true)
        #expect(
            Set(Self.seen(again)) == [
                #"#1 child_changed /a/x 4"#, #"#1 value /a {"x":4}"#, #"#2 value /a/x 4"#,
            ])
    }

    // MARK: Updates

    @Test func anUpdateChangesSeveralPathsInOneBatchOfEvents() {
        var tree = Self.listening(to: ["x": 1, "y": ["z": 1, "k": 1]])
        let update = tree.applyUserMerge(
            ["x": Node(.number(2)), "y/z": Node(.number(3)), "w": Node(.number(4))], at: "a", writeID: 0)
        #expect(
            Self.seen(update) == [
                #"#1 child_added /a/w 4"#, #"#1 child_changed /a/x 2"#, #"#1 child_changed /a/y {"k":1,"z":3}"#,
                #"#1 value /a {"w":4,"x":2,"y":{"k":1,"z":3}}"#,
            ])
        let reverted = tree.ackUserWrite(writeID: 0, revert: true)
        #expect(
            Self.seen(reverted) == [
                #"#1 child_removed /a/w 4"#, #"#1 child_changed /a/x 1"#, #"#1 child_changed /a/y {"k":1,"z":1}"#,
                #"#1 value /a {"x":1,"y":{"k":1,"z":1}}"#,
            ])
    }

    @Test func anUpdateSeenFromBelowChangesOnlyWhatItTouches() {
        var tree = Self.listening(to: ["y": ["z": 1, "k": 1]])
        _ = tree.addRegistration(EventRegistration(id: 2, types: [.value]), for: QuerySpec(path: "a/y/k"))
        let update = tree.applyUserMerge(["y/z": Node(.number(3))], at: "a", writeID: 0)
        #expect(!update.contains { $0.registration.id == 2 })
        #expect(Self.value(tree, at: "a/y") == Self.node(["z": 3, "k": 1]))
    }

    @Test func anUpdateMovesChildrenOfALimitedWindowInOneBatch() throws {
        var tree = SyncTree(listenProvider: SilentListenProvider())
        let topTwo = QuerySpec(path: "a", params: try QueryParams().ordered(by: .child("score")).limited(toLast: 2))
        _ = tree.addRegistration(EventRegistration(id: 1, types: [.value]), for: QuerySpec(path: "a"))
        _ = tree.addRegistration(EventRegistration(id: 2, types: Self.everything), for: topTwo)
        _ = tree.applyServerOverwrite(Self.node(["p": ["score": 1], "q": ["score": 2], "r": ["score": 3]]), at: "a")
        // q drops to the bottom and a new child s comes in at the top: p never shows.
        let update = tree.applyUserMerge(
            ["q/score": Node(.number(0)), "s": Self.node(["score": 9])], at: "a", writeID: 0)
        #expect(
            Self.seen(update.filter { $0.registration.id == 2 }) == [
                #"#2 child_removed /a/q {"score":2}"#, #"#2 child_added /a/s {"score":9}"#,
                #"#2 value /a {"r":{"score":3},"s":{"score":9}}"#,
            ])
    }

    // MARK: Hidden writes

    @Test func aHiddenWriteRaisesNothingUntilTheServerSendsTheData() {
        var tree = Self.listening(to: ["x": 1])
        #expect(tree.applyUserOverwrite(Node(.number(5)), at: "a/x", writeID: 0, visible: false).isEmpty)
        #expect(Self.value(tree, at: "a") == Self.node(["x": 1]))
        // Transactions see it even so.
        #expect(tree.completeEventCache(at: "a") == Self.node(["x": 5]))

        let fromServer = tree.applyServerOverwrite(Node(.number(5)), at: "a/x")
        #expect(Self.seen(fromServer) == [#"#1 child_changed /a/x 5"#, #"#1 value /a {"x":5}"#])
        #expect(tree.ackUserWrite(writeID: 0).isEmpty)
        #expect(tree.pendingWrites.allWrites.isEmpty)
    }

    @Test func aRevertedHiddenWriteRaisesNothing() {
        var tree = Self.listening(to: ["x": 1])
        _ = tree.applyUserOverwrite(Node(.number(5)), at: "a/x", writeID: 0, visible: false)
        #expect(tree.ackUserWrite(writeID: 0, revert: true).isEmpty)
        #expect(tree.completeEventCache(at: "a") == Self.node(["x": 1]))
    }

    @Test func acknowledgingAnUnknownWriteRaisesNothing() {
        var tree = Self.listening(to: ["x": 1])
        #expect(tree.ackUserWrite(writeID: 42).isEmpty)
        #expect(tree.ackUserWrite(writeID: 42, revert: true).isEmpty)
    }

    // MARK: Data for transactions

    @Test func completeEventCacheLayersPendingWritesAndLeavesOutExcludedOnes() {
        var tree = Self.listening(to: ["x": 1, "y": 1])
        _ = tree.applyUserOverwrite(Node(.number(2)), at: "a/x", writeID: 0)
        _ = tree.applyUserOverwrite(Node(.number(3)), at: "a/z", writeID: 1)
        _ = tree.applyUserOverwrite(Node(.number(9)), at: "a/y", writeID: 2, visible: false)

        #expect(tree.completeEventCache(at: "a") == Self.node(["x": 2, "y": 9, "z": 3]))
        #expect(tree.completeEventCache(at: "a", excluding: [1]) == Self.node(["x": 2, "y": 9]))
        #expect(tree.completeEventCache(at: "a", excluding: [0, 2]) == Self.node(["x": 1, "y": 1, "z": 3]))
        #expect(tree.completeEventCache(at: "a/x", excluding: [0]) == Node(.number(1)))
        #expect(tree.completeEventCache(at: "a/x") == Node(.number(2)))
        // Excluding writes changes nothing for listeners.
        #expect(Self.value(tree, at: "a") == Self.node(["x": 2, "y": 1, "z": 3]))
    }

    @Test func completeEventCacheExcludesARetriedTransactionsOwnSet() {
        var tree = Self.listening(to: ["n": 1])
        // A transaction's set over the whole location, and a later one below it.
        _ = tree.applyUserOverwrite(Self.node(["n": 2]), at: "a", writeID: 0)
        _ = tree.applyUserOverwrite(Node(.string("m")), at: "a/m", writeID: 1)
        #expect(tree.completeEventCache(at: "a", excluding: [0]) == Self.node(["n": 1, "m": "m"]))
        #expect(tree.completeEventCache(at: "a", excluding: [0, 1]) == Self.node(["n": 1]))
    }

    @Test func completeEventCacheWithoutServerDataStartsFromNull() {
        var tree = SyncTree(listenProvider: SilentListenProvider())
        #expect(tree.completeEventCache(at: "q") == .empty)
        _ = tree.applyUserOverwrite(Node(.number(1)), at: "q/r", writeID: 0)
        #expect(tree.completeEventCache(at: "q") == Self.node(["r": 1]))
        #expect(tree.completeEventCache(at: "q", excluding: [0]) == .empty)
    }

    // MARK: Random writes under a limited window

    /// SplitMix64: a failing seed replays exactly.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The top three by score of `data`, ties by key (the keys used are plain letters), in query order.
    static func topThree(_ data: [String: Int]) -> [(key: ChildKey, node: Node)] {
        let sorted = data.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }
        return sorted.suffix(3).map { (ChildKey($0.key), scoreNode($0.value)) }
    }

    @Test(arguments: 0..<40)
    func optimisticWritesKeepALimitedWindowEqualToServerDataPlusPendingWrites(seed: UInt64) throws {
        var rng = SeededGenerator(state: seed)
        var tree = SyncTree(listenProvider: SilentListenProvider())
        let query = QuerySpec(path: "a", params: try QueryParams().ordered(by: .child("score")).limited(toLast: 3))
        _ = tree.addRegistration(EventRegistration(id: 1, types: [.value]), for: QuerySpec(path: "a"))
        _ = tree.addRegistration(EventRegistration(id: 2, types: Self.everything), for: query)
        let keys = ["a", "b", "c", "d", "e", "f"]
        var server: [String: Int] = [:]
        for key in keys where Bool.random(using: &rng) { server[key] = Int.random(in: 0...5, using: &rng) }
        _ = tree.applyServerOverwrite(
            Node(children: server.map { (ChildKey($0.key), Self.scoreNode($0.value)) }), at: "a")
        var pending: [(id: Int, key: String, score: Int?)] = []
        var nextID = 0
        var log: [String] = []
        var shown: [(key: ChildKey, node: Node)] = []
        for case .data(_, _, let change) in tree.addRegistration(
            EventRegistration(id: 3, types: Self.everything), for: query)
        {
            Self.apply(change, to: &shown)
        }
        for _ in 0..<40 {
            var events: [Event]
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3:
                let key = keys.randomElement(using: &rng)!
                let score = Int.random(in: -1...5, using: &rng)
                let write = (id: nextID, key: key, score: score < 0 ? nil : score)
                pending.append(write)
                nextID += 1
                log.append("set #\(write.id) \(key)=\(write.score.map(String.init) ?? "null")")
                events = tree.applyUserOverwrite(
                    write.score.map(Self.scoreNode) ?? .empty, at: Path(keys: ["a", ChildKey(key)]), writeID: write.id)
            case 4...5 where !pending.isEmpty:
                // The server applies the oldest write, tells listeners, then acknowledges it.
                let write = pending.removeFirst()
                server[write.key] = write.score
                log.append("ack #\(write.id)")
                events = tree.applyServerOverwrite(
                    write.score.map(Self.scoreNode) ?? .empty, at: Path(keys: ["a", ChildKey(write.key)]))
                events += tree.ackUserWrite(writeID: write.id)
            case 6...7 where !pending.isEmpty:
                let write = pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))
                log.append("revert #\(write.id)")
                events = tree.ackUserWrite(writeID: write.id, revert: true)
            default:
                let key = keys.randomElement(using: &rng)!
                let score = Int.random(in: -1...5, using: &rng)
                server[key] = score < 0 ? nil : score
                log.append("server \(key)=\(score)")
                events = tree.applyServerOverwrite(
                    server[key].map(Self.scoreNode) ?? .empty, at: Path(keys: ["a", ChildKey(key)]))
            }
            var visible = server
            for write in pending { visible[write.key] = write.score }
            let expectedOrder = Self.topThree(visible)
            let expected = Node(children: expectedOrder.map { ($0.key, $0.node) })
            let window = tree.cachedValue(for: query)
            if window != expected {
                Issue.record(
                    "seed \(seed): window \(window.map(\.description) ?? "nil"), expected \(expected) after \(log)")
                return
            }
            // The window's events, applied in order with their prevName, rebuild it.
            for case .data(let registration, _, let change) in events where registration.id == 2 {
                Self.apply(change, to: &shown)
            }
            let shownNode = Node(children: shown.map { ($0.key, $0.node) })
            if shown.map(\.key) != expectedOrder.map(\.key) || shownNode != expected {
                Issue.record(
                    "seed \(seed): events show \(shown.map(\.key)) \(shownNode), expected \(expected) after \(log)")
                return
            }
        }
    }

    /// Applies one event to an ordered list the way a client list does: insert after `prevName`.
    static func apply(_ change: Change, to list: inout [(key: ChildKey, node: Node)]) {
        guard let name = change.childName else { return }
        let existing = list.firstIndex { $0.key == name }
        func position(after prev: ChildKey?) -> Int {
            prev.flatMap { prev in list.firstIndex { $0.key == prev }.map { $0 + 1 } } ?? 0
        }
        switch change.type {
        case .childAdded:
            list.insert((name, change.node), at: position(after: change.prevName))
        case .childRemoved:
            if let existing { list.remove(at: existing) }
        case .childMoved:
            if let existing {
                let moved = list.remove(at: existing)
                list.insert(moved, at: position(after: change.prevName))
            }
        case .childChanged:
            if let existing { list[existing].node = change.node }
        case .value:
            break
        }
    }

    static func scoreNode(_ score: Int) -> Node { Node(children: [(ChildKey("score"), Node(.number(Double(score))))]) }
}
