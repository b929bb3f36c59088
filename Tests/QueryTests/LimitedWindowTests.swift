import PropertyBased
import Query
import Testing
import Tree

/// A limited query (`orderByChild("score").limitToLast(3)`, optionally bounded) keeps exactly the
/// first or last n children of its range as children come, move and go, refilling the window from
/// the data outside it; and the events it raises rebuild that window when applied in order.
struct LimitedWindowTests {
    /// A query and the same selection written out naively.
    struct Scenario: CustomStringConvertible {
        var params: QueryParams
        var count: Int
        var fromStart: Bool
        var start: ReferenceBound?
        var end: ReferenceBound?

        var description: String { params.description }
    }

    /// A range bound on the score: `key == nil` admits every key at `value`.
    struct ReferenceBound {
        var value: Int
        var key: String?
        var inclusive: Bool
    }

    /// One child's state: absent, present without a score, or present with one. `tag` is an
    /// unindexed field, so that changing it changes the child without moving it.
    enum ChildState: CustomStringConvertible, Equatable {
        case absent
        case unscored(tag: Int)
        case scored(Int, tag: Int)

        var node: Node {
            switch self {
            case .absent: .empty
            case .unscored(let tag): Node(children: [(ChildKey("tag"), Node(.number(Double(tag))))])
            case .scored(let score, let tag):
                Node(children: [
                    (ChildKey("score"), Node(.number(Double(score)))), (ChildKey("tag"), Node(.number(Double(tag)))),
                ])
            }
        }

        var description: String {
            switch self {
            case .absent: "null"
            case .unscored(let tag): "{tag \(tag)}"
            case .scored(let score, let tag): "{score \(score) tag \(tag)}"
            }
        }
    }

    struct Step: CustomStringConvertible {
        var key: String
        var state: ChildState
        var description: String { "\(key)=\(state)" }
    }

    static let keys = ["1", "2", "10", "a", "b", "c", "d", "e"]

    static let scenarios: [Scenario] = {
        let byScore = try! QueryParams().ordered(by: .child("score"))
        func scenario(
            _ count: Int, fromStart: Bool, start: ReferenceBound? = nil, end: ReferenceBound? = nil
        ) -> Scenario {
            var params = byScore
            if let start {
                let value = Node(.number(Double(start.value)))
                let key = start.key.map { ChildKey($0) }
                params =
                    try! start.inclusive
                    ? params.starting(at: value, key: key) : params.starting(after: value, key: key)
            }
            if let end {
                let value = Node(.number(Double(end.value)))
                let key = end.key.map { ChildKey($0) }
                params =
                    try! end.inclusive ? params.ending(at: value, key: key) : params.ending(before: value, key: key)
            }
            params = try! fromStart ? params.limited(toFirst: count) : params.limited(toLast: count)
            return Scenario(params: params, count: count, fromStart: fromStart, start: start, end: end)
        }
        var all: [Scenario] = []
        for fromStart in [true, false] {
            all += [
                scenario(3, fromStart: fromStart),
                scenario(1, fromStart: fromStart),
                scenario(3, fromStart: fromStart, start: ReferenceBound(value: 2, inclusive: true)),
                scenario(3, fromStart: fromStart, end: ReferenceBound(value: 4, inclusive: true)),
                scenario(
                    2, fromStart: fromStart, start: ReferenceBound(value: 1, key: "c", inclusive: true),
                    end: ReferenceBound(value: 4, key: "b", inclusive: true)),
                scenario(
                    3, fromStart: fromStart, start: ReferenceBound(value: 1, inclusive: false),
                    end: ReferenceBound(value: 5, inclusive: false)),
                scenario(
                    2, fromStart: fromStart, start: ReferenceBound(value: 2, key: "a", inclusive: false),
                    end: ReferenceBound(value: 3, key: "c", inclusive: false)),
            ]
        }
        return all
    }()

    static let state = zip(Gen.int(in: 0...9), Gen.int(in: 0...2))
        .map { value, tag -> ChildState in
            switch value {
            case 0...1: .absent
            case 2: .unscored(tag: tag)
            default: .scored(value - 3, tag: tag)
            }
        }

    static let initial = state.array(of: keys.count)
    static let steps = zip(Gen.int(in: 0...(keys.count - 1)), state)
        .map { Step(key: keys[$0], state: $1) }
        .array(of: 1...50)
    static let scenarioIndex = Gen.int(in: 0...(scenarios.count - 1))

    // MARK: Reference model

    /// The window recomputed from all the data: filter by range, sort, take n from the anchored end.
    static func window(_ data: [String: ChildState], _ scenario: Scenario) -> [(key: String, node: Node)] {
        let inRange = data.filter { key, state in
            guard state != .absent else { return false }
            let afterStart = scenario.start.map { admits(key, state, $0, isStart: true) } ?? true
            let beforeEnd = scenario.end.map { admits(key, state, $0, isStart: false) } ?? true
            return afterStart && beforeEnd
        }
        let sorted = inRange.sorted { a, b in
            let order = ReferenceOrder.compare(scoreValue(a.value), scoreValue(b.value))
            return order != 0 ? order < 0 : ReferenceOrder.compareKeys(a.key, b.key) < 0
        }
        let kept = scenario.fromStart ? sorted.prefix(scenario.count) : sorted.suffix(scenario.count)
        return kept.map { (key: $0.key, node: $0.value.node) }
    }

    static func scoreValue(_ state: ChildState) -> ReferenceOrder.Value {
        if case .scored(let score, _) = state { return .number(Double(score)) }
        return .null
    }

    /// Whether a child lies on the inner side of `bound`.
    static func admits(_ key: String, _ state: ChildState, _ bound: ReferenceBound, isStart: Bool) -> Bool {
        var order = ReferenceOrder.compare(scoreValue(state), .number(Double(bound.value)))
        if order == 0, let boundKey = bound.key { order = ReferenceOrder.compareKeys(key, boundKey) }
        if isStart { return bound.inclusive ? order >= 0 : order > 0 }
        return bound.inclusive ? order <= 0 : order < 0
    }

    static func node(_ window: [(key: String, node: Node)]) -> Node {
        Node(children: window.map { (ChildKey($0.key), $0.node) })
    }

    // MARK: Driving a view

    static func data(_ initial: [ChildState]) -> [String: ChildState] {
        var data: [String: ChildState] = [:]
        for (key, state) in zip(keys, initial) where state != .absent { data[key] = state }
        return data
    }

    static func emptyView(_ params: QueryParams) -> View {
        let unknown = CacheNode(node: .empty, isFullyInitialized: false, isFiltered: false)
        return View(params: params, initialCache: ViewCache(eventCache: unknown, serverCache: unknown))
    }

    static func serverOverwrite(_ view: inout View, at key: String?, _ node: Node) -> [Change] {
        let path = key.map { Path(keys: [ChildKey($0)]) } ?? .root
        return view.apply(
            .overwrite(source: .server, path: path, node: node), writes: NoPendingWrites(), completeServerCache: nil)
    }

    @Test func windowEqualsNaiveRecomputationAfterEveryServerUpdate() async {
        await propertyCheck(count: 300, input: Self.scenarioIndex, Self.initial, Self.steps) { index, initial, steps in
            let scenario = Self.scenarios[index]
            var data = Self.data(initial)
            var view = Self.emptyView(scenario.params)
            _ = Self.serverOverwrite(&view, at: nil, Self.node(data.map { (key: $0.key, node: $0.value.node) }))
            #expect(view.completeEventNode == Self.node(Self.window(data, scenario)), "\(scenario) initially")
            for (number, step) in steps.enumerated() {
                data[step.key] = step.state == .absent ? nil : step.state
                _ = Self.serverOverwrite(&view, at: step.key, step.state.node)
                let expected = Self.window(data, scenario)
                guard let actual = view.completeEventNode else {
                    Issue.record("\(scenario): view incomplete after step \(number) \(step)")
                    return
                }
                let actualKeys = actual.children(in: scenario.params.index).map(\.name.string)
                if actual != Self.node(expected) || actualKeys != expected.map(\.key) {
                    Issue.record(
                        "\(scenario) step \(number) \(step): window \(actualKeys) \(actual), expected \(expected.map(\.key))"
                    )
                    return
                }
            }
        }
    }

    @Test func eventsAppliedInOrderRebuildTheWindow() async {
        await propertyCheck(count: 300, input: Self.scenarioIndex, Self.initial, Self.steps) { index, initial, steps in
            let scenario = Self.scenarios[index]
            var data = Self.data(initial)
            var view = Self.emptyView(scenario.params)
            var list = LimitedWindowTests.EventList()
            let first = Self.serverOverwrite(&view, at: nil, Self.node(data.map { (key: $0.key, node: $0.value.node) }))
            list.apply(first)
            #expect(list.problems.isEmpty, "\(scenario) initially: \(list.problems)")
            #expect(first.last?.type == .value, "\(scenario): the initial data ends with a value event")
            for (number, step) in steps.enumerated() {
                let before = Self.window(data, scenario)
                data[step.key] = step.state == .absent ? nil : step.state
                let expected = Self.window(data, scenario)
                let events = Self.serverOverwrite(&view, at: step.key, step.state.node)
                list.apply(events)
                let context = "\(scenario) step \(number) \(step), events \(events)"
                let listKeys = list.entries.map(\.key.string)
                if !list.problems.isEmpty || listKeys != expected.map(\.key)
                    || list.entries.map(\.node) != expected.map(\.node)
                {
                    Issue.record("\(context): \(list.problems) list \(listKeys), expected \(expected.map(\.key))")
                    return
                }
                // A step that leaves the window alone raises nothing; any other ends with one value event.
                let windowChanged = Self.node(before) != Self.node(expected)
                if windowChanged != !events.isEmpty
                    || events.filter({ $0.type == .value }).count != (windowChanged ? 1 : 0)
                    || (windowChanged && events.last?.type != .value)
                {
                    Issue.record("\(context): window changed \(windowChanged)")
                    return
                }
            }
        }
    }

    /// What a client shows for a query: the children in order, maintained only from events.
    struct EventList {
        var entries: [(key: ChildKey, node: Node)] = []
        var problems: [String] = []

        private func position(after prevName: ChildKey?) -> Int? {
            guard let prevName else { return 0 }
            return entries.firstIndex { $0.key == prevName }.map { $0 + 1 }
        }

        mutating func apply(_ changes: [Change]) {
            for change in changes { apply(change) }
        }

        mutating func apply(_ change: Change) {
            guard let name = change.childName else {
                let shown = Node(children: entries.map { ($0.key, $0.node) })
                if change.node != shown { problems.append("value \(change.node) but list holds \(shown)") }
                return
            }
            let existing = entries.firstIndex { $0.key == name }
            switch change.type {
            case .childAdded:
                guard existing == nil else { return problems.append("\(change): already listed") }
                guard let position = position(after: change.prevName) else {
                    return problems.append("\(change): unknown prevName")
                }
                entries.insert((name, change.node), at: position)
            case .childRemoved:
                guard let existing else { return problems.append("\(change): not listed") }
                if entries[existing].node != change.node { problems.append("\(change): removed data differs") }
                entries.remove(at: existing)
            case .childMoved:
                // The data changes with the child_changed that follows; a move only repositions.
                guard let existing else { return problems.append("\(change): not listed") }
                let moved = entries.remove(at: existing)
                guard let position = position(after: change.prevName) else {
                    return problems.append("\(change): unknown prevName")
                }
                entries.insert(moved, at: position)
            case .childChanged:
                guard let existing else { return problems.append("\(change): not listed") }
                if change.oldNode != entries[existing].node { problems.append("\(change): old data differs") }
                let predecessor = existing == 0 ? nil : entries[existing - 1].key
                if predecessor != change.prevName { problems.append("\(change): listed after \(predecessor as Any)") }
                entries[existing].node = change.node
            case .value:
                break
            }
        }
    }
}
