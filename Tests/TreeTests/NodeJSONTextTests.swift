import PropertyBased
import Testing
import Tree

/// `Node.jsonText` writes what `Node.json` serialized writes, for every shape.
struct NodeJSONTextTests {
    @Test func randomTreesWriteTheSameTextAsTheirJSONValue() async {
        await propertyCheck(count: 200, input: Self.edit.array(of: 1...30)) { edits in
            var node = Node.empty
            for edit in edits {
                node = node.updating(at: edit.path, to: try Node(json: edit.value))
            }
            for exportFormat in [false, true] {
                for pretty in [false, true] {
                    let value = node.json(exportFormat: exportFormat)
                    #expect(
                        node.jsonText(exportFormat: exportFormat, pretty: pretty)
                            == value.serialized(pretty: pretty), "\(node)")
                    #expect(
                        node.jsonText(exportFormat: exportFormat, arrayAtTop: false, pretty: pretty)
                            == Self.objectAtTop(value).serialized(pretty: pretty), "\(node)")
                }
            }
        }
    }

    @Test func sparseAndDenseArraysAndPriorityAmongKeys() throws {
        let dense = try Node(jsonText: #"{"0": "a", "2": "c", "3": {"1": true}}"#)
        #expect(dense.jsonText() == #"["a",null,"c",[null,true]]"#)
        #expect(dense.jsonText(arrayAtTop: false) == #"{"0":"a","2":"c","3":[null,true]}"#)
        let sparse = try Node(jsonText: #"{"0": 1, "9": 2}"#)
        #expect(sparse.jsonText() == #"{"0":1,"9":2}"#)
        let prioritized = try Node(
            jsonText: #"{"1": 1, "a": {".value": "v", ".priority": 2}, "-": 0, ".priority": "p"}"#)
        #expect(prioritized.jsonText(exportFormat: true) == prioritized.json(exportFormat: true).serialized())
        #expect(
            prioritized.jsonText(exportFormat: true)
                == #"{"1":1,"-":0,".priority":"p","a":{".priority":2,".value":"v"}}"#)
    }

    /// What a REST query answers: an array at the top becomes an object of its non-null elements.
    private static func objectAtTop(_ value: JSONValue) -> JSONValue {
        guard case .array(let elements) = value else { return value }
        var members: [String: JSONValue] = [:]
        for (offset, element) in elements.enumerated() where element != .null { members[String(offset)] = element }
        return .object(members)
    }

    private static let keys = ["0", "1", "2", "3", "7", "10", "01", "-1", "a", "B", " ", "z\u{e9}", "-"]

    private static func leaf(_ rng: inout any SeededRandomNumberGenerator) -> JSONValue {
        switch Int.random(in: 0...5, using: &rng) {
        case 0: .bool(Bool.random(using: &rng))
        case 1: .number(Double(Int.random(in: -1000...1000, using: &rng)) / 8)
        case 2: .number([1e300, -0.0, 9_007_199_254_740_992, 0.1].randomElement(using: &rng)!)
        case 3: .string(["", "quote \" and \\", "line\nfeed\t\u{1}", "\u{e9}\u{1F600}"].randomElement(using: &rng)!)
        default: .string("s\(Int.random(in: 0...9, using: &rng))")
        }
    }

    /// A write of a leaf, a removal, a priority, or a leaf with a priority, at depth 1 to 3.
    private static let edit = Generator<NodeEdit, Shrink.None<NodeEdit>> { rng in
        let depth = Int.random(in: 1...3, using: &rng)
        var keys = (0..<depth).map { _ in Self.keys.randomElement(using: &rng)! }
        let value: JSONValue
        switch Int.random(in: 0...9, using: &rng) {
        case 0: value = .null
        case 1:
            keys.append(".priority")
            value = Bool.random(using: &rng) ? leaf(&rng).stringValue.map(JSONValue.string) ?? .number(1) : .number(3)
        case 2: value = [".value": leaf(&rng), ".priority": .string("p")]
        default: value = leaf(&rng)
        }
        return NodeEdit(keys: keys, value: value)
    }
}
