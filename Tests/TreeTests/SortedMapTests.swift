import PropertyBased
import Testing
import Tree

struct SortedMapTests {
    typealias IntMap = SortedMap<Int, Int, NaturalOrder<Int>>

    /// One step of a random edit sequence: insert `key → value`, or remove `key`.
    struct Step: CustomStringConvertible {
        var insert: Bool
        var key: Int
        var value: Int
        var description: String { insert ? "+\(key)=\(value)" : "-\(key)" }
    }

    struct Entry: Equatable, CustomStringConvertible {
        var key: Int
        var value: Int
        var description: String { "\(key)=\(value)" }
    }

    static let keyRange = 0...30
    /// Probe keys: every possible key plus one outside each end.
    static let probes = Array(keyRange.lowerBound - 1...keyRange.upperBound + 1)

    static let steps = zip(Gen.bool(0.6), Gen.int(in: keyRange), Gen.int(in: 0...999))
        .map { Step(insert: $0.0, key: $0.1, value: $0.2) }
        .array(of: 0...120)

    @Test func randomEditsMatchDictionaryModel() async {
        await propertyCheck(count: 60, input: Self.steps) { steps in
            var map = IntMap(order: NaturalOrder())
            var model: [Int: Int] = [:]
            for step in steps {
                let before = (map: map, entries: Self.entries(of: model))
                if step.insert {
                    map = map.inserting(step.key, step.value)
                    model[step.key] = step.value
                } else {
                    map = map.removing(step.key)
                    model[step.key] = nil
                }
                #expect(map.invariantViolation() == nil, "after \(step)")
                let problems = Self.differences(map, model)
                #expect(problems.isEmpty, "after \(step): \(problems)")
                // Persistence: the map before the step still holds exactly what it held.
                #expect(Self.entries(of: before.map) == before.entries, "old map changed by \(step)")
                if problems.isEmpty == false { return }
            }
        }
    }

    @Test func modifyingValuesInPlaceSparesCopies() async {
        await propertyCheck(count: 60, input: Self.steps) { steps in
            var map = IntMap(order: NaturalOrder())
            var model: [Int: Int] = [:]
            for (number, step) in steps.enumerated() {
                // Every other step a copy shares the tree, so both the in-place and the copying way run.
                let copy = number.isMultiple(of: 2) ? (map: map, entries: Self.entries(of: model)) : nil
                if step.insert {
                    let found = map.modifyValue(forKey: step.key) { $0 = step.value }
                    #expect(found == (model[step.key] != nil))
                    if !found { map = map.inserting(step.key, step.value) }
                    model[step.key] = step.value
                } else {
                    map = map.removing(step.key)
                    model[step.key] = nil
                }
                #expect(map.invariantViolation() == nil, "after \(step)")
                #expect(Self.differences(map, model).isEmpty, "after \(step)")
                if let copy { #expect(Self.entries(of: copy.map) == copy.entries, "copy changed by \(step)") }
            }
        }
    }

    @Test func insertingInPlaceKeepsBalanceAndSpareCopies() async {
        await propertyCheck(count: 60, input: Self.steps) { steps in
            var map = IntMap(order: NaturalOrder())
            var model: [Int: Int] = [:]
            for (number, step) in steps.enumerated() {
                // Every third step a copy shares the tree: its nodes must be copied, not changed.
                let copy = number.isMultiple(of: 3) ? (map: map, entries: Self.entries(of: model)) : nil
                if step.insert {
                    // Half the insertions through `updateValue`, which says what it replaced.
                    if number.isMultiple(of: 2) {
                        let replaced = map.updateValue(step.value, forKey: step.key)
                        #expect(replaced == model[step.key], "replaced by \(step)")
                    } else {
                        map.insert(step.key, step.value)
                    }
                    model[step.key] = step.value
                } else {
                    map = map.removing(step.key)
                    model[step.key] = nil
                }
                #expect(map.invariantViolation() == nil, "after \(step)")
                #expect(Self.differences(map, model).isEmpty, "after \(step)")
                if let copy { #expect(Self.entries(of: copy.map) == copy.entries, "copy changed by \(step)") }
            }
        }
    }

    @Test func insertingAscendingKeysInPlaceStaysBalanced() {
        var map = IntMap(order: NaturalOrder())
        for key in 0..<5_000 { map.insert(key, key) }
        #expect(map.invariantViolation() == nil)
        #expect(map.count == 5_000)
        #expect(map[4_999] == 4_999)
    }

    @Test func buildingFromSortedPairsGivesValidTree() async {
        await propertyCheck(count: 100, input: Gen.int(in: 0...300), Gen.int(in: 0...300)) { count, extra in
            let pairs = (0..<count).map { ($0 * 2, $0) }
            let map = IntMap(sorted: pairs, order: NaturalOrder())
            #expect(map.invariantViolation() == nil, "\(count) pairs")
            #expect(map.count == count)
            #expect(Self.entries(of: map) == pairs.map { Entry(key: $0.0, value: $0.1) })
            // Pairs that cannot be indexed in O(1) (a filtered view) build the same tree.
            let viewed = IntMap(sorted: pairs.lazy.filter { _ in true }, order: NaturalOrder())
            #expect(viewed.invariantViolation() == nil)
            #expect(Self.entries(of: viewed) == Self.entries(of: map))
            // The built tree keeps working under edits.
            let edited = map.inserting(extra, -1).removing(extra + 1)
            #expect(edited.invariantViolation() == nil)
            var model = Dictionary(uniqueKeysWithValues: pairs)
            model[extra] = -1
            model[extra + 1] = nil
            #expect(Self.differences(edited, model).isEmpty)
        }
    }

    /// Sorted runs appended after the last key join the tree whole: it stays balanced (whatever the
    /// two heights), holds what inserting them one by one gives, and a copy sharing it is unchanged.
    @Test func appendingSortedRunsKeepsBalanceAndContents() async {
        let runs = zip(Gen.int(in: 0...400), Gen.int(in: 0...3), Gen.int(in: 1...3)).array(of: 1...8)
        await propertyCheck(count: 100, input: runs) { runs in
            var map = IntMap(order: NaturalOrder())
            var model: [Int: Int] = [:]
            var next = 0
            for (length, gap, step) in runs {
                let copy = (map: map, entries: Self.entries(of: model))
                next += gap
                let pairs = (0..<length).map { (key: next + $0 * step, value: -$0) }
                let appended = map.append(sorted: pairs)
                #expect(appended)
                for pair in pairs { model[pair.key] = pair.value }
                next += length * step
                #expect(map.invariantViolation() == nil, "after a run of \(length) on \(copy.entries.count)")
                #expect(Self.differences(map, model).isEmpty)
                #expect(Self.entries(of: copy.map) == copy.entries, "a copy changed")
            }
        }
    }

    @Test func pairsThatDoNotFollowTheLastKeyAreNotAppended() {
        var map = IntMap(sorted: [(1, 1), (5, 5)], order: NaturalOrder())
        let refused = [
            [(key: 5, value: 0), (key: 6, value: 0)], [(key: 3, value: 0)], [(key: 7, value: 0), (key: 7, value: 1)],
            [(key: 9, value: 0), (key: 8, value: 0)],
        ]
        for pairs in refused {
            let appended = map.append(sorted: pairs)
            #expect(!appended, "\(pairs)")
        }
        #expect(Self.entries(of: map) == [Entry(key: 1, value: 1), Entry(key: 5, value: 5)])
        let appended = map.append(sorted: [(key: 6, value: 6)])
        #expect(appended)
        #expect(map.count == 3 && map.invariantViolation() == nil)
    }

    @Test func keyOrderMap() {
        let map = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder())
            .inserting("b", 2).inserting("10", 10).inserting("a", 1).inserting("2", 20)
        #expect(Array(map.keys) == ["2", "10", "a", "b"])
        #expect(map["10"] == 10)
        #expect(map["010"] == nil)
        #expect(map.invariantViolation() == nil)
    }

    @Test func zeroSpellingsAreDistinctKeys() {
        let map = SortedMap<ChildKey, Int, KeyOrder>(order: KeyOrder())
            .inserting("00", 1).inserting("-0", 2).inserting("0", 3)
        #expect(map.count == 3)
        #expect(map["00"] == 1)
        #expect(map["-0"] == 2)
        #expect(map["0"] == 3)
        #expect(map.invariantViolation() == nil)
    }

    @Test func emptyMap() {
        let map = IntMap(order: NaturalOrder())
        #expect(map.isEmpty)
        #expect(map.count == 0)
        #expect(map.first == nil)
        #expect(map.last == nil)
        #expect(map.predecessor(of: 1) == nil)
        #expect(map.successor(of: 1) == nil)
        #expect(Array(map.elements(from: 1)).isEmpty)
        #expect(map.removing(1).isEmpty)
        #expect(map.invariantViolation() == nil)
    }

    @Test func overwritingKeepsCount() {
        let map = IntMap(order: NaturalOrder()).inserting(1, 1).inserting(1, 2)
        #expect(map.count == 1)
        #expect(map[1] == 2)
    }

    @Test func forEachStopsEarly() {
        let map = IntMap(sorted: (0..<10).map { ($0, $0) }, order: NaturalOrder())
        var seen: [Int] = []
        let finished = map.forEach { key, _ in
            seen.append(key)
            return key < 3
        }
        #expect(!finished)
        #expect(seen == [0, 1, 2, 3])
        #expect(map.forEach { _, _ in true })
    }

    // MARK: Model comparison

    static func entries(of model: [Int: Int]) -> [Entry] {
        model.sorted { $0.key < $1.key }.map { Entry(key: $0.key, value: $0.value) }
    }

    static func entries(of map: IntMap) -> [Entry] {
        map.map { Entry(key: $0.key, value: $0.value) }
    }

    static func entries(_ elements: IntMap.Elements) -> [Entry] {
        elements.map { Entry(key: $0.key, value: $0.value) }
    }

    /// Every way in which `map` disagrees with `model`.
    static func differences(_ map: IntMap, _ model: [Int: Int]) -> [String] {
        var problems: [String] = []
        let sorted = entries(of: model)
        if map.count != model.count { problems.append("count \(map.count) != \(model.count)") }
        if map.isEmpty != model.isEmpty { problems.append("isEmpty") }
        if entries(of: map) != sorted { problems.append("elements \(entries(of: map)) != \(sorted)") }
        if Array(map.keys) != sorted.map(\.key) { problems.append("keys") }
        if entries(map.elements(reverse: true)) != sorted.reversed() { problems.append("reverse elements") }
        if map.first?.key != sorted.first?.key || map.first?.value != sorted.first?.value {
            problems.append("first \(String(describing: map.first))")
        }
        if map.last?.key != sorted.last?.key || map.last?.value != sorted.last?.value {
            problems.append("last \(String(describing: map.last))")
        }
        for probe in probes {
            if map[probe] != model[probe] { problems.append("[\(probe)]") }
            let before = sorted.last { $0.key < probe }
            let after = sorted.first { $0.key > probe }
            if map.predecessor(of: probe).map({ Entry(key: $0.key, value: $0.value) }) != before {
                problems.append("predecessor(of: \(probe))")
            }
            if map.successor(of: probe).map({ Entry(key: $0.key, value: $0.value) }) != after {
                problems.append("successor(of: \(probe))")
            }
            if entries(map.elements(from: probe)) != sorted.filter({ $0.key >= probe }) {
                problems.append("elements(from: \(probe))")
            }
            if entries(map.elements(from: probe, reverse: true)) != sorted.filter({ $0.key <= probe }).reversed() {
                problems.append("elements(from: \(probe), reverse: true)")
            }
        }
        return problems
    }
}
