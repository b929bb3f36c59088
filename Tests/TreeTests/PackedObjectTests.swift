import PropertyBased
import Synchronization
import Testing

@testable import Tree

/// A packed node (small objects held as their JSON text) behaves exactly as the same node built
/// member by member, for every reader and every change.
struct PackedObjectTests {
    @Test func aRecordOfLeavesIsPackedAsItsCanonicalText() throws {
        let json = try JSONValue(parsing: #"{"score": 36, "name": "ada", "bio": "line\nfeed \"q\"", "ok": true}"#)
        let node = try Node(json: json, serverValues: nil, packing: true)
        #expect(node.packedText == #"{"bio":"line\nfeed \"q\"","name":"ada","ok":true,"score":36}"#)
        #expect(node.jsonText() == node.packedText)
        #expect(node.child("name") == Node(.string("ada")))
        #expect(node.child("nope") == .empty)
        #expect(node.childCount == 4)
        #expect(try Node(json: json).packedText == nil)
    }

    @Test(arguments: [
        #"{"0": "a", "b": 1}"#,  // an integer key: such objects may be written as arrays
        #"{"-5": 1}"#,
        #"{"a": 1, ".priority": 2}"#,
        #"{".value": 1, ".priority": 2}"#,
        #"{"a": {".sv": "timestamp"}}"#,
        #"{"a": [1, 2]}"#,
        #"{"a": -0.0}"#,
        #"{"a": null}"#,
        #"{"a": {}}"#,
    ])
    func objectsWhoseTextIsNotTheirOnlySpellingAreNotPacked(_ text: String) throws {
        let node = try Node(
            json: JSONValue(parsing: text), serverValues: ServerValueContext(now: 1), packing: true)
        #expect(node.packedText == nil, "\(text)")
    }

    @Test func objectsOverTheSizeLimitsAreNotPacked() throws {
        let long = String(repeating: "x", count: PackedObject.maxBytes)
        #expect(try Node(json: ["a": .string(long)], serverValues: nil, packing: true).packedText == nil)
        var many: [String: JSONValue] = [:]
        for index in 0...PackedObject.maxMembers { many["k\(index)"] = .bool(true) }
        #expect(try Node(json: .object(many), serverValues: nil, packing: true).packedText == nil)
        many["k0"] = nil
        #expect(try Node(json: .object(many), serverValues: nil, packing: true).packedText != nil)
    }

    /// Whatever is packed is read back as packed text by a store: around the size limit too, where
    /// the closing brace once took a text one byte past it (and its row was set aside on load).
    @Test func everyPackedTextAroundTheLimitLoadsBack() throws {
        for length in (PackedObject.maxBytes - 24)...(PackedObject.maxBytes - 4) {
            let json = JSONValue.object(["a": .string(String(repeating: "x", count: length))])
            let nested = JSONValue.object(["n": json])
            for value in [json, nested] {
                guard let text = try Node(json: value, serverValues: nil, packing: true).packedText else { continue }
                #expect(text.utf8.count <= PackedObject.maxBytes, "\(length)")
                #expect(Node.isPackedText(text), "\(length)")
            }
        }
    }

    /// Keys that differ only in Unicode normalization are different keys, packed or not.
    @Test func packedTextsAreComparedByTheirBytes() throws {
        let composed = try Node(json: ["\u{e9}": 1], serverValues: nil, packing: true)
        let decomposed = try Node(json: ["e\u{301}": 1], serverValues: nil, packing: true)
        #expect(composed.packedText != nil && decomposed.packedText != nil)
        #expect(composed != decomposed)
        #expect(try Node(json: ["\u{e9}": 1]) != Node(json: ["e\u{301}": 1]))
    }

    /// Invalid data is refused with the same error whether or not it would have been packed.
    @Test func invalidMembersAreRefusedAsWithoutPacking() throws {
        let bad = try JSONValue(parsing: #"{"a.b": 1, "c": 2}"#)
        #expect(throws: TreeError.invalidData(path: "", reason: #"key "a.b" contains '.'"#)) {
            try Node(json: bad, serverValues: nil, packing: true)
        }
        let deep = (0...TreeLimits.maxDepth).reduce(JSONValue.number(1)) { inner, _ in .object(["a": inner]) }
        #expect(throws: TreeError.self) { try Node(json: deep, serverValues: nil, packing: true) }
        #expect(throws: TreeError.self) { try Node(json: deep) }
    }

    @Test func randomObjectsReadTheSamePackedAsBuiltMemberByMember() async {
        await propertyCheck(count: 300, input: Self.object) { json in
            let plain = try Node(json: json)
            let packed = try Node(json: json, serverValues: nil, packing: true)
            try Self.expectSame(packed, plain, json)
            if let text = packed.packedText {
                // What a store reads back is the same node.
                try Self.expectSame(Node(packedObject: text), plain, json)
            }
        }
    }

    @Test func changesToAPackedNodeGiveWhatTheyGiveTheNodeBuiltMemberByMember() async {
        await propertyCheck(count: 300, input: Self.object, Self.edit.array(of: 1...6)) { json, edits in
            var plain = try Node(json: json)
            var packed = try Node(json: json, serverValues: nil, packing: true)
            var packedInPlace = packed
            for edit in edits {
                let value = try Node(json: edit.value, serverValues: nil, packing: true)
                plain = plain.updating(at: edit.path, to: value)
                packed = packed.updating(at: edit.path, to: value)
                packedInPlace.update(at: edit.path, to: value)
            }
            try Self.expectSame(packed, plain, json)
            try Self.expectSame(packedInPlace, plain, json)
        }
    }

    /// A node of many packed children keeps their hashes once its own was computed: every change,
    /// in place or through a copy, must leave it the hash of the same data built afresh.
    @Test func keptHashesOfPackedChildrenFollowEveryChange() async {
        await propertyCheck(count: 150, input: Self.object, Self.edit.array(of: 1...10)) { record, edits in
            // Records that cannot be packed (an integer key) have nothing to keep.
            guard try Node(json: record, serverValues: nil, packing: true).packedText != nil else { return }
            var members: [String: JSONValue] = [:]
            // More members than one packed object holds: the node itself has a child map.
            for filler in 0..<PackedObject.maxMembers { members["f\(filler)"] = record }
            for key in Self.keys.dropLast(2) { members[key] = record }
            var inPlace = try Node(json: .object(members), serverValues: nil, packing: true)
            #expect(inPlace.packedText == nil && inPlace.child(ChildKey("a")).packedText != nil)
            var persistent = inPlace
            _ = inPlace.hash
            for edit in edits {
                let value = try Node(json: edit.value, serverValues: nil, packing: true)
                let before = persistent
                persistent = persistent.updating(at: edit.path, to: value)
                inPlace.update(at: edit.path, to: value)
                let fresh = try Node(json: inPlace.json(exportFormat: true))
                #expect(inPlace.hash == fresh.hash, "after \(edit)")
                #expect(persistent.hash == fresh.hash, "after \(edit)")
                #expect(before.hash == before.json(exportFormat: true).hashOfFreshNode(), "a copy changed by \(edit)")
            }
        }
    }

    /// A write of one value sets its child in place (``Node/setChildInPlace(at:key:to:)``) when the
    /// way down is the tree's alone: it must leave what an update leaves, say what it replaced, and
    /// change nothing when the tree is shared.
    @Test func settingOneChildInPlaceGivesWhatAnUpdateGives() async {
        let changedInPlace = Mutex(0)
        await propertyCheck(count: 300, input: Self.object, Self.edit.array(of: 1...10)) { json, edits in
            var inPlace = try Node(json: json, serverValues: nil, packing: true)
            var persistent = try Node(json: json, serverValues: nil, packing: true)
            for edit in edits {
                let value = try Node(json: edit.value, serverValues: nil, packing: true)
                let before = persistent
                persistent = persistent.updating(at: edit.path, to: value)
                guard let key = edit.path.back, let parent = edit.path.parent,
                    let replaced = inPlace.setChildInPlace(at: parent, key: key, to: value)
                else {
                    inPlace.update(at: edit.path, to: value)
                    continue
                }
                changedInPlace.withLock { $0 += 1 }
                #expect(!key.isPriorityKey && !value.isEmpty, "\(edit)")
                #expect(replaced == before.child(at: edit.path), "\(edit)")
                #expect(inPlace == persistent, "\(edit)")
                #expect(inPlace.hash == persistent.hash, "\(edit)")
                // Shared, the tree is not changed.
                let shared = inPlace
                #expect(inPlace.setChildInPlace(at: parent, key: key, to: .empty) == nil)
                #expect(inPlace.setChildInPlace(at: parent, key: key, to: Node(.string("other"))) == nil)
                #expect(inPlace == shared && inPlace == persistent, "\(edit)")
            }
        }
        #expect(changedInPlace.withLock { $0 } > 100, "the in-place path ran")
    }

    private static func expectSame(_ packed: Node, _ plain: Node, _ json: JSONValue) throws {
        #expect(packed == plain, "\(json.serialized())")
        #expect(plain == packed)
        #expect(packed.hash == plain.hash)
        #expect(packed.childCount == plain.childCount)
        for exportFormat in [false, true] {
            for pretty in [false, true] {
                for arrayAtTop in [false, true] {
                    #expect(
                        packed.jsonText(exportFormat: exportFormat, arrayAtTop: arrayAtTop, pretty: pretty)
                            == plain.jsonText(exportFormat: exportFormat, arrayAtTop: arrayAtTop, pretty: pretty))
                }
            }
            #expect(packed.json(exportFormat: exportFormat) == plain.json(exportFormat: exportFormat))
        }
        for first in keys {
            #expect(packed.child(ChildKey(first)) == plain.child(ChildKey(first)))
            for second in keys {
                let path = Path(keys: [ChildKey(first), ChildKey(second)])
                #expect(packed.child(at: path) == plain.child(at: path))
            }
        }
        for index in [Index.key, .priority, .value, .child("a"), .child("b/c")] {
            #expect(packed.children(in: index).map(\.name) == plain.children(in: index).map(\.name))
            #expect(packed.firstChild(in: index)?.name == plain.firstChild(in: index)?.name)
            #expect(packed.lastChild(in: index)?.name == plain.lastChild(in: index)?.name)
            for child in plain.children(in: index) {
                #expect(
                    packed.predecessor(of: child.name, child: child.node, in: index)
                        == plain.predecessor(of: child.name, child: child.node, in: index))
                #expect(
                    packed.children(in: index, from: child).map(\.name)
                        == plain.children(in: index, from: child).map(\.name))
            }
        }
    }

    private static let keys = ["a", "b", "c", "B", " ", "z\u{e9}", "-", "\u{e9}\u{301}", "0", "10"]

    private static func leaf(_ rng: inout any SeededRandomNumberGenerator) -> JSONValue {
        switch Int.random(in: 0...6, using: &rng) {
        case 0: .bool(Bool.random(using: &rng))
        case 1: .number(Double(Int.random(in: -1000...1000, using: &rng)) / 8)
        case 2: .number([1e300, 0x1p60, 0.1, 1e-7].randomElement(using: &rng)!)
        case 3:
            .string(["", "quote \" and \\", "line\nfeed\t\u{1}", "\u{e9}\u{1F600}", "/"].randomElement(using: &rng)!)
        case 4: .null
        default: .string("s\(Int.random(in: 0...9, using: &rng))")
        }
    }

    private static func value(_ rng: inout any SeededRandomNumberGenerator, depth: Int) -> JSONValue {
        guard depth < 3, Int.random(in: 0...2, using: &rng) == 0 else { return leaf(&rng) }
        return object(&rng, depth: depth + 1)
    }

    static func object(_ rng: inout any SeededRandomNumberGenerator, depth: Int) -> JSONValue {
        var members: [String: JSONValue] = [:]
        // Integer keys are rare, so that most objects can be packed.
        let names = Int.random(in: 0...4, using: &rng) == 0 ? keys : Array(keys.dropLast(2))
        for _ in 0..<Int.random(in: 1...5, using: &rng) {
            members[names.randomElement(using: &rng)!] = value(&rng, depth: depth)
        }
        return .object(members)
    }

    static let object = Generator<JSONValue, Shrink.None<JSONValue>> { rng in
        Self.object(&rng, depth: 0)
    }

    /// A leaf, a removal, a small object or a priority, written at depth 1 to 3.
    private static let edit = Generator<NodeEdit, Shrink.None<NodeEdit>> { rng in
        var path = (0..<Int.random(in: 1...3, using: &rng)).map { _ in Self.keys.randomElement(using: &rng)! }
        let value: JSONValue
        switch Int.random(in: 0...5, using: &rng) {
        case 0: value = .null
        case 1:
            path.append(".priority")
            value = .number(Double(Int.random(in: 0...3, using: &rng)))
        case 2: value = object(&rng, depth: 2)
        default: value = leaf(&rng)
        }
        return NodeEdit(keys: path, value: value)
    }
}

extension JSONValue {
    /// The hash of this data as a node built afresh (nothing cached in it).
    fileprivate func hashOfFreshNode() -> String? { try? Node(json: self).hash }
}
