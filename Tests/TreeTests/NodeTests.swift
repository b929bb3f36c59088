import PropertyBased
import Testing
import Tree

struct NodeTests {
    // MARK: Random updates against a model

    @Test func randomUpdatesMatchNestedDictionaryModel() async {
        await propertyCheck(count: 100, input: NodeGen.edit.array(of: 1...40)) { edits in
            var node = Node.empty
            var model = JSONValue.null
            for edit in edits {
                let previous = (node: node, model: model)
                node = node.updating(at: edit.path, to: try Node(json: edit.value))
                model = JSONModel.setting(edit.value, at: edit.keys[...], in: model)

                let expected = try Node(json: model)
                #expect(node == expected, "after \(edit)")
                #expect(node.json() == model, "after \(edit)")
                #expect(node.childCount == (model.objectValue?.count ?? 0))
                #expect(node.child(at: edit.path) == (try Node(json: edit.value)), "after \(edit)")
                if let parent = edit.path.parent, let back = edit.path.back {
                    let parentModel = JSONModel.value(at: parent.components.map(\.string)[...], in: model)
                    #expect(node.child(at: parent) == (try Node(json: parentModel)))
                    #expect(node.child(at: parent).child(back) == (try Node(json: edit.value)))
                }
                // The node the update started from is untouched.
                #expect(previous.node == (try Node(json: previous.model)), "old node changed by \(edit)")
                if node != expected { return }
            }
        }
    }

    @Test(arguments: [false, true])
    func inPlaceUpdatesMatchPersistentUpdatesAndSpareCopies(withPriorities: Bool) async {
        let edits = withPriorities ? NodeGen.childEdit : NodeGen.edit
        await propertyCheck(count: 100, input: edits.array(of: 1...40)) { edits in
            // Built apart, so that only the snapshot ever shares storage with `inPlace`.
            var inPlace = try Node(json: ["a": ["x": 1], "b": 2])
            var persistent = try Node(json: ["a": ["x": 1], "b": 2])
            var snapshot: (node: Node, json: JSONValue)?
            for (step, edit) in edits.enumerated() {
                // A cached hash must not survive the change; a copy taken now must not see it.
                _ = inPlace.hash
                if step.isMultiple(of: 3) { snapshot = (inPlace, inPlace.json()) }
                inPlace.update(at: edit.path, to: try Node(json: edit.value))
                persistent = persistent.updating(at: edit.path, to: try Node(json: edit.value))

                #expect(inPlace == persistent, "after \(edit)")
                #expect(inPlace.hash == (try Node(json: persistent.json(exportFormat: true))).hash, "after \(edit)")
                let expected = ReferenceOrder.sortedNames(persistent, .priority)
                #expect(inPlace.children(in: .priority).map(\.name) == expected, "after \(edit)")
                if let snapshot { #expect(snapshot.node.json() == snapshot.json, "copy changed by \(edit)") }
                if inPlace != persistent { return }
            }
        }
    }

    @Test func inPlaceUpdateCarriesBuiltIndexes() throws {
        var node = try Node(json: ["a": 3, "b": 1, "c": 2])
        #expect(node.children(in: .value).map(\.name) == ["b", "c", "a"])
        node.update(at: "b", to: Node(.number(10)))
        node.update(at: "c", to: .empty)
        #expect(node.children(in: .value).map(\.name) == ["a", "b"])
        node.update(at: "a", to: .empty)
        node.update(at: "b", to: .empty)
        #expect(node == .empty)
    }

    // MARK: Reading children

    @Test func childAccessors() throws {
        let node = try Node(json: ["users": ["ada": ["age": 36, "name": "Ada"]], "count": 2])
        #expect(node.childCount == 2)
        #expect(node.child("count") == Node(.number(2)))
        #expect(node.child("missing") == .empty)
        #expect(node.child(at: "users/ada/age") == Node(.number(36)))
        #expect(node.child(at: "users/ada").childCount == 2)
        #expect(node.child(at: "users/ada/age/deeper") == .empty)
        #expect(node.child(at: "users/bob/age") == .empty)
        #expect(node.child(at: .root) == node)
        #expect(node.hasChild("users"))
        #expect(!node.hasChild("nobody"))
        #expect(Array(node.children.keys) == ["count", "users"])
        #expect(Node(.string("leaf")).childCount == 0)
        #expect(Node(.string("leaf")).child("a") == .empty)
        #expect(Node.empty.child(at: "a/b") == .empty)
        #expect(node.leafValue == nil)
        #expect(node.child("count").leafValue == .number(2))
        #expect(node.child("count").isLeaf)
        #expect(!node.isLeaf)
        #expect(!node.isEmpty)
    }

    @Test func zeroSpellingsAreDistinctChildren() throws {
        // "00" and "-0" read as the same integer with the same length, yet name different children.
        let node = try Node(jsonText: #"{"00": "a", "-0": "b", "0": "c"}"#)
        #expect(node.childCount == 3)
        #expect(node.child("00") == Node(.string("a")))
        #expect(node.child("-0") == Node(.string("b")))
        #expect(node.updatingChild("-0", to: .empty).child("00") == Node(.string("a")))
    }

    @Test func childrenInitializerDropsEmptyChildren() {
        let node = Node(children: [(ChildKey("a"), Node(.bool(true))), (ChildKey("b"), .empty)])
        #expect(node.childCount == 1)
        #expect(Node(children: [(ChildKey("a"), Node.empty)]) == .empty)
        #expect(Node(children: [(ChildKey, Node)](), priority: .number(1)) == .empty)
    }

    // MARK: Writing children

    @Test func leafBecomesParentKeepingPriority() {
        let leaf = Node(.number(1), priority: .string("p"))
        let parent = leaf.updatingChild("a", to: Node(.bool(true)))
        #expect(parent.leafValue == nil)
        #expect(parent.childCount == 1)
        #expect(parent.child("a") == Node(.bool(true)))
        #expect(parent.priority == .string("p"))

        let deep = leaf.updating(at: "a/b", to: Node(.string("x")))
        #expect(deep.priority == .string("p"))
        #expect(deep.child(at: "a/b") == Node(.string("x")))
    }

    @Test func writingEmptyToAbsentChildChangesNothing() {
        let leaf = Node(.number(1))
        #expect(leaf.updatingChild("a", to: .empty) == leaf)
        #expect(Node.empty.updating(at: "a/b", to: .empty) == .empty)
    }

    @Test func removingLastChildGivesEmpty() throws {
        let node = try Node(json: ["a": 1, ".priority": 5])
        let removed = node.updatingChild("a", to: .empty)
        #expect(removed == .empty)
        #expect(removed.isEmpty)
        #expect(removed.priority == nil)

        let nested = try Node(json: ["a": ["b": ["c": 1]], "d": 2])
        let pruned = nested.updating(at: "a/b/c", to: .empty)
        #expect(pruned.child("a") == .empty)
        #expect(pruned.childCount == 1)
        #expect(pruned == (try Node(json: ["d": 2])))
    }

    @Test func replacingRootAndSubtree() throws {
        let node = try Node(json: ["a": ["b": 1, "c": 2]])
        #expect(node.updating(at: .root, to: Node(.string("x"))) == Node(.string("x")))
        #expect(node.updating(at: "a", to: Node(.bool(false))) == (try Node(json: ["a": false])))
        #expect(node.updating(at: "a/b/c", to: Node(.number(3))) == (try Node(json: ["a": ["b": ["c": 3], "c": 2]])))
    }

    @Test func priorityPseudoChild() throws {
        let node = try Node(json: ["a": ["x": 1, ".priority": 7], "b": ["x": 2]])
        #expect(node.child(at: "a/.priority") == Node(.number(7)))
        #expect(node.child("a").child(.priority) == Node(.number(7)))
        #expect(node.child(at: "b/.priority") == .empty)
        #expect(node.child(.priority) == .empty)

        let written = node.updating(at: "b/.priority", to: Node(.string("p")))
        #expect(written.child("b").priority == .string("p"))
        #expect(written.child(at: "b/x") == Node(.number(2)))
        #expect(written.child(at: "b/.priority") == Node(.string("p")))

        let cleared = node.updating(at: "a/.priority", to: .empty)
        #expect(cleared.child("a").priority == nil)
        #expect(cleared.child(at: "a/x") == Node(.number(1)))

        let rootPriority = node.updating(at: ".priority", to: Node(.number(1)))
        #expect(rootPriority.priority == .number(1))
        #expect(rootPriority.childCount == 2)

        // A priority needs a value to hang on: absent locations stay absent.
        #expect(Node.empty.updating(at: ".priority", to: Node(.number(1))) == .empty)
        #expect(node.updating(at: "missing/.priority", to: Node(.number(1))) == node)

        let leaf = Node(.string("v")).updatingChild(.priority, to: Node(.number(2)))
        #expect(leaf == Node(.string("v"), priority: .number(2)))
        #expect(leaf.priorityNode == Node(.number(2)))
    }

    @Test func priorityTakesPartInEquality() {
        #expect(Node(.number(1), priority: .number(1)) != Node(.number(1)))
        #expect(Node(.number(1)).withPriority(.string("a")) == Node(.number(1), priority: .string("a")))
        let parent = Node(children: [(ChildKey("a"), Node(.number(1)))])
        #expect(parent.withPriority(.number(1)) != parent)
        #expect(parent.withPriority(.number(1)).withPriority(nil) == parent)
        #expect(Node.empty.withPriority(.number(1)) == .empty)
    }

    // MARK: Children in index order

    /// Children chosen so that every index orders them differently.
    static let mixed: JSONValue = [
        "a": ["x": 3],
        "b": "s",
        "c": true,
        "d": false,
        "e": [".value": 5, ".priority": "p"],
        "f": ["x": "z", ".priority": 1],
        "g": [".value": 2, ".priority": 1],
        "10": -1,
        "9": ["x": false],
    ]

    @Test(arguments: [
        (Index.key, ["9", "10", "a", "b", "c", "d", "e", "f", "g"]),
        (Index.priority, ["9", "10", "a", "b", "c", "d", "f", "g", "e"]),
        (Index.value, ["d", "c", "10", "g", "e", "b", "9", "a", "f"]),
        (Index.child("x"), ["10", "b", "c", "d", "e", "g", "9", "a", "f"]),
    ])
    func childrenInIndexOrder(index: Index, expected: [ChildKey]) throws {
        let node = try Node(json: Self.mixed)
        #expect(node.children(in: index).map(\.name) == expected)
        #expect(node.children(in: index, reverse: true).map(\.name) == expected.reversed())
        #expect(node.firstChild(in: index)?.name == expected.first)
        #expect(node.lastChild(in: index)?.name == expected.last)
        for (offset, name) in expected.enumerated() {
            let child = NamedNode(name: name, node: node.child(name))
            #expect(node.children(in: index, from: child).map(\.name) == Array(expected[offset...]))
            #expect(
                node.children(in: index, from: child, reverse: true).map(\.name) == expected[...offset].reversed())
            let predecessor = offset > 0 ? expected[offset - 1] : nil
            #expect(node.predecessor(of: name, child: child.node, in: index) == predecessor, "\(name)")
        }
        #expect(node.children(in: index, from: index.minPost).map(\.name) == expected)
        #expect(node.children(in: index, from: index.maxPost).map(\.name) == [])
        #expect(node.children(in: index, from: index.maxPost, reverse: true).map(\.name) == expected.reversed())
        #expect(node.children(in: index, from: index.minPost, reverse: true).map(\.name) == [])
    }

    @Test func namedNodeSentinelsBoundKeyPriorityAndValueIndexes() throws {
        let node = try Node(json: Self.mixed)
        for index in [Index.key, .priority, .value] {
            let all = node.children(in: index).map(\.name)
            #expect(node.children(in: index, from: .min).map(\.name) == all)
            #expect(node.children(in: index, from: .max).map(\.name) == [])
            #expect(node.children(in: index, from: .max, reverse: true).map(\.name) == all.reversed())
        }
    }

    @Test func deepChildIndex() throws {
        let node = try Node(json: ["a": ["x": ["y": 2]], "b": ["x": ["y": 1]], "c": ["x": 5]])
        #expect(node.children(in: .child("x/y")).map(\.name) == ["c", "b", "a"])
    }

    @Test func leavesAndEmptyHaveNoChildrenInAnyIndex() {
        for index in [Index.key, .priority, .value, .child("x")] {
            #expect(Array(Node(.number(1)).children(in: index)).isEmpty)
            #expect(Array(Node.empty.children(in: index)).isEmpty)
            #expect(Node.empty.firstChild(in: index) == nil)
            #expect(Node(.number(1)).predecessor(of: "a", child: .empty, in: index) == nil)
        }
    }

    @Test func indexesFollowUpdatesOfUsedNodes() throws {
        let node = try Node(json: ["a": 3, "b": 1, "c": 2])
        #expect(node.children(in: .value).map(\.name) == ["b", "c", "a"])
        let updated = node.updatingChild("b", to: Node(.number(10))).updatingChild("d", to: Node(.number(0)))
        #expect(updated.children(in: .value).map(\.name) == ["d", "c", "a", "b"])
        #expect(updated.predecessor(of: "b", child: Node(.number(10)), in: .value) == "a")
        // The original keeps its own order.
        #expect(node.children(in: .value).map(\.name) == ["b", "c", "a"])
        let removed = updated.updatingChild("c", to: .empty)
        #expect(removed.children(in: .value).map(\.name) == ["d", "a", "b"])
    }

    @Test func randomUpdatesKeepUsedIndexesCurrent() async {
        await propertyCheck(count: 100, input: NodeGen.childEdit.array(of: 1...40)) { edits in
            var node = try Node(json: ["a": ["x": 1], "b": 2])
            for edit in edits {
                // Use every index on the node first, so that the update must carry each of them along.
                let before = NodeGen.indexes.map { index in node.children(in: index).map(\.name) }
                let old = node
                node = node.updating(at: edit.path, to: try Node(json: edit.value))
                for index in NodeGen.indexes {
                    let expected = ReferenceOrder.sortedNames(node, index)
                    let actual = node.children(in: index).map(\.name)
                    #expect(actual == expected, "\(index) after \(edit) on \(old)")
                    if actual != expected { return }
                    #expect(node.children(in: index, reverse: true).map(\.name) == expected.reversed())
                    for (offset, name) in expected.enumerated() {
                        let predecessor = offset > 0 ? expected[offset - 1] : nil
                        #expect(node.predecessor(of: name, child: node.child(name), in: index) == predecessor)
                    }
                }
                let after = NodeGen.indexes.map { index in old.children(in: index).map(\.name) }
                #expect(before == after, "old node's order changed by \(edit)")
            }
        }
    }

    @Test func referenceOrderMatchesFixedExample() throws {
        // Guards the reference used above: it must reproduce the hand-written orders.
        let node = try Node(json: Self.mixed)
        #expect(ReferenceOrder.sortedNames(node, .value) == ["d", "c", "10", "g", "e", "b", "9", "a", "f"])
        #expect(ReferenceOrder.sortedNames(node, .child("x")) == ["10", "b", "c", "d", "e", "g", "9", "a", "f"])
        #expect(ReferenceOrder.sortedNames(node, .priority) == ["9", "10", "a", "b", "c", "d", "f", "g", "e"])
    }
}

/// One write: `value` at `keys`.
struct NodeEdit: CustomStringConvertible {
    var keys: [String]
    var value: JSONValue
    var path: Path { Path(keys: keys.map { ChildKey($0) }) }
    var description: String { "\(path) = \(value.serialized())" }
}

enum NodeGen {
    static let keys = ["a", "b", "c", "2", "10"]

    /// A small leaf, a small object, or null (a removal).
    static func value(_ rng: inout any SeededRandomNumberGenerator) -> JSONValue {
        switch Int.random(in: 0...9, using: &rng) {
        case 0, 1: .null
        case 2: .bool(Bool.random(using: &rng))
        case 3, 4, 5: .number(Double(Int.random(in: -3...3, using: &rng)) / 2)
        case 6: .string(["", "a", "b", "é"].randomElement(using: &rng)!)
        default:
            .object(["a": .number(Double(Int.random(in: 0...2, using: &rng))), "c": ["10": .bool(true)]])
        }
    }

    /// A write at depth 0 to 3 (depth 0, the root, is rare).
    static let edit = Generator<NodeEdit, Shrink.None<NodeEdit>> { rng in
        let depth = Int.random(in: 0...20, using: &rng) == 0 ? 0 : Int.random(in: 1...3, using: &rng)
        let keys = (0..<depth).map { _ in Self.keys.randomElement(using: &rng)! }
        return NodeEdit(keys: keys, value: value(&rng))
    }

    static let childKeys = ["a", "b", "c", "d", "1", "2", "10"]
    static let indexes: [Index] = [.key, .priority, .value, .child("x"), .child("x/y")]

    /// A write to a child, to its `x` or `x/y`, or to its priority; values with frequent ties.
    static let childEdit = Generator<NodeEdit, Shrink.None<NodeEdit>> { rng in
        let key = childKeys.randomElement(using: &rng)!
        let number = JSONValue.number(Double(Int.random(in: 0...2, using: &rng)))
        let string = JSONValue.string(["a", "b"].randomElement(using: &rng)!)
        switch Int.random(in: 0...5, using: &rng) {
        case 0:
            return NodeEdit(keys: [key], value: [number, string, .bool(false), .null].randomElement(using: &rng)!)
        case 1:
            return NodeEdit(keys: [key, ".priority"], value: [number, string, .null].randomElement(using: &rng)!)
        case 2:
            return NodeEdit(keys: [key, "x"], value: [number, string, .bool(true), .null].randomElement(using: &rng)!)
        case 3:
            return NodeEdit(keys: [key, "x", "y"], value: [number, string, .null].randomElement(using: &rng)!)
        case 4:
            return NodeEdit(keys: [key], value: [".value": number, ".priority": string])
        default:
            return NodeEdit(keys: [key], value: ["x": number, ".priority": number])
        }
    }
}

/// A JSON value edited the slow, obvious way.
enum JSONModel {
    /// `tree` with `value` written at `keys`; `null` removes, and objects left empty disappear.
    /// Removing below a leaf keeps the leaf; writing a value below it replaces the leaf by an object.
    static func setting(_ value: JSONValue, at keys: ArraySlice<String>, in tree: JSONValue) -> JSONValue {
        guard let key = keys.first else { return value }
        if value == .null, tree.objectValue == nil { return tree }
        var members = tree.objectValue ?? [:]
        let child = setting(value, at: keys.dropFirst(), in: members[key] ?? .null)
        // (`members[key] = nil` would store JSON null: JSONValue is ExpressibleByNilLiteral.)
        if child == .null || child == .object([:]) {
            members.removeValue(forKey: key)
        } else {
            members[key] = child
        }
        return members.isEmpty ? .null : .object(members)
    }

    static func value(at keys: ArraySlice<String>, in tree: JSONValue) -> JSONValue {
        guard let key = keys.first else { return tree }
        return value(at: keys.dropFirst(), in: tree[key] ?? .null)
    }
}

/// Child order written from PROTOCOL.md: null < false < true < numbers < strings < objects for values;
/// no priority < numbers < strings for priorities; ties by key.
enum ReferenceOrder {
    static func sortedNames(_ node: Node, _ index: Index) -> [ChildKey] {
        node.children.map { (name: $0.key, node: $0.value) }
            .sorted { a, b in
                let order = compare(a.node, b.node, index)
                return order != 0 ? order < 0 : a.name < b.name
            }
            .map(\.name)
    }

    static func compare(_ a: Node, _ b: Node, _ index: Index) -> Int {
        switch index {
        case .key: 0
        case .priority: comparePriorities(a.priority, b.priority)
        case .value: compareValues(a, b)
        case .child(let path): compareValues(a.child(at: path), b.child(at: path))
        }
    }

    static func valueRank(_ node: Node) -> Int {
        if node.isEmpty { return 0 }
        switch node.leafValue {
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case nil: return 5
        }
    }

    static func compareValues(_ a: Node, _ b: Node) -> Int {
        let (ra, rb) = (valueRank(a), valueRank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a.leafValue, b.leafValue) {
        case (.number(let x), .number(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): return ReferenceKeyOrder.codePointOrder(x, y)
        default: return 0
        }
    }

    static func comparePriorities(_ a: Priority?, _ b: Priority?) -> Int {
        switch (a, b) {
        case (nil, nil): 0
        case (nil, _): -1
        case (_, nil): 1
        case (.number(let x)?, .number(let y)?): x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x)?, .string(let y)?): ReferenceKeyOrder.codePointOrder(x, y)
        case (.number?, .string?): -1
        case (.string?, .number?): 1
        }
    }
}
