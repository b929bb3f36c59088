import Testing
import Tree

struct NodeJSONTests {
    // MARK: Import

    @Test func importsEveryKindOfValue() throws {
        let node = try Node(jsonText: #"{"s": "text", "n": 1.5, "i": -3, "t": true, "f": false, "o": {"k": "v"}}"#)
        #expect(node.child("s") == Node(.string("text")))
        #expect(node.child("n") == Node(.number(1.5)))
        #expect(node.child("i") == Node(.number(-3)))
        #expect(node.child("t") == Node(.bool(true)))
        #expect(node.child("f") == Node(.bool(false)))
        #expect(node.child(at: "o/k") == Node(.string("v")))
        #expect(node.childCount == 6)
    }

    @Test func nullsAndEmptyContainersAreAbsent() throws {
        #expect(try Node(jsonText: "null") == .empty)
        #expect(try Node(jsonText: "{}") == .empty)
        #expect(try Node(jsonText: "[]") == .empty)
        #expect(try Node(jsonText: #"{"a": null, "b": {}, "c": [], "d": {"e": null}}"#) == .empty)
        #expect(try Node(jsonText: #"{"a": null, "b": 1}"#) == Node(children: [(ChildKey("b"), Node(.number(1)))]))
    }

    @Test func arraysBecomeIndexKeys() throws {
        let node = try Node(jsonText: #"["a", "b", null, "d"]"#)
        #expect(Array(node.children.keys) == ["0", "1", "3"])
        #expect(node.child("3") == Node(.string("d")))
        #expect(node.json() == ["a", "b", nil, "d"])
    }

    @Test func priorityAndValueImport() throws {
        let leaf = try Node(jsonText: #"{".value": "v", ".priority": 2}"#)
        #expect(leaf == Node(.string("v"), priority: .number(2)))
        let parent = try Node(jsonText: #"{"a": 1, ".priority": "p"}"#)
        #expect(parent.priority == .string("p"))
        #expect(parent.childCount == 1)
        #expect(try Node(jsonText: #"{".value": 3}"#) == Node(.number(3)))
        // `.value` wraps a leaf (the form priorities need); an object under it is refused, not unwrapped.
        #expect(throws: TreeError.self) { try Node(jsonText: #"{".value": {"a": 1}, ".priority": 1}"#) }
        #expect(try Node(jsonText: #"{"a": 1, ".priority": null}"#).priority == nil)
    }

    // MARK: Export

    @Test func exportsEveryKindOfValue() throws {
        let text = #"{"f":false,"i":-3,"n":1.5,"o":{"k":"v"},"s":"text","t":true}"#
        #expect(try Node(jsonText: text).json().serialized() == text)
        #expect(Node.empty.json() == .null)
    }

    @Test func integersExportWithoutFraction() throws {
        #expect(Node(.number(2)).json().serialized() == "2")
        #expect(try Node(jsonText: "2.0").json().serialized() == "2")
        #expect(Node(.number(-0.0)).json().serialized() == "0")
        #expect(Node(.number(1_700_000_000_000)).json().serialized() == "1700000000000")
        #expect(Node(.number(1.25)).json().serialized() == "1.25")
        #expect(Node(.number(-0.5)).json().serialized() == "-0.5")
    }

    @Test func arrayRoundTrip() throws {
        let json: JSONValue = ["list": [1, "two", [3, 4], ["k": true]]]
        let node = try Node(json: json)
        #expect(node.child(at: "list/2/1") == Node(.number(4)))
        #expect(node.json() == json)
    }

    @Test(arguments: [
        // More than half the slots filled: an array with nulls in the gaps.
        (#"{"0": 1, "2": 1}"#, "[1,null,1]"),
        (#"{"1": "x"}"#, #"[null,"x"]"#),
        (#"{"0": 1, "1": 2, "2": 3, "5": 6}"#, "[1,2,3,null,null,6]"),
        // Half or fewer: an object.
        (#"{"0": 1, "5": 1}"#, #"{"0":1,"5":1}"#),
        (#"{"2": 1}"#, #"{"2":1}"#),
        (#"{"0": 1, "1": 1, "6": 1}"#, #"{"0":1,"1":1,"6":1}"#),
        // Keys that are not plain indexes never make arrays.
        (#"{"0": 1, "01": 2}"#, #"{"0":1,"01":2}"#),
        (#"{"01": 1}"#, #"{"01":1}"#),
        (#"{"0": 1, "-1": 2}"#, #"{"-1":2,"0":1}"#),
        (#"{"0": 1, "a": 2}"#, #"{"0":1,"a":2}"#),
        (#"{"0": 1, " 1": 2}"#, #"{"0":1," 1":2}"#),
    ])
    func sparseIndexKeysExport(input: String, output: String) throws {
        #expect(try Node(jsonText: input).json().serialized() == output)
    }

    @Test func exportFormatCarriesPriorities() throws {
        let node = try Node(json: [
            "a": [".value": 1, ".priority": "p"],
            "b": ["c": true, ".priority": 2.5],
            "d": "plain",
            ".priority": 0,
        ])
        #expect(
            node.json(exportFormat: true)
                == [
                    ".priority": 0,
                    "a": [".value": 1, ".priority": "p"],
                    "b": ["c": true, ".priority": 2.5],
                    "d": "plain",
                ])
        #expect(node.json() == ["a": 1, "b": ["c": true], "d": "plain"])
        #expect(Node(.bool(true), priority: .number(1)).json(exportFormat: true) == [".value": true, ".priority": 1])
        #expect(Node(.bool(true), priority: .number(1)).json() == true)
        // Export format re-imports to the same node.
        #expect(try Node(json: node.json(exportFormat: true)) == node)
    }

    @Test func exportFormatNeverMakesArrays() throws {
        let node = try Node(jsonText: #"["x", "y"]"#)
        #expect(node.json(exportFormat: true) == ["0": "x", "1": "y"])
    }

    @Test func descriptionIsExportJSON() throws {
        let node = try Node(json: ["a": 1, ".priority": 3])
        #expect(node.description == #"{".priority":3,"a":1}"#)
        #expect(Node.empty.description == "null")
    }

    // MARK: Errors

    @Test func invalidKeysAreRejectedWithPath() throws {
        let error = #expect(throws: TreeError.self) { try Node(jsonText: #"{"a": {"b.c": 1}}"#) }
        #expect(error == .invalidData(path: "a", reason: #"key "b.c" contains '.'"#))
        for key in ["$x", "#", "a[", "]", "a/b", "", "\u{1}", ".sv2", ".other", ".info"] {
            #expect(throws: TreeError.self, "\(key)") { try Node(json: [key: 1]) }
        }
        let long = String(repeating: "x", count: 769)
        #expect(throws: TreeError.self) { try Node(json: [long: 1]) }
        #expect(try Node(json: [String(repeating: "x", count: 768): 1]).childCount == 1)
    }

    @Test func valueBesideOtherChildrenIsRejected() throws {
        let error = #expect(throws: TreeError.self) {
            try Node(jsonText: #"{".value": 1, "a": 2}"#, at: "x/y")
        }
        #expect(error == .invalidData(path: "x/y", reason: "contains .value beside other children"))
        #expect(throws: TreeError.self) { try Node(jsonText: #"{".value": 1, ".priority": 2, "a": 3}"#) }
        #expect(try Node(jsonText: #"{".value": 1, ".priority": 2}"#).priority == .number(2))
    }

    @Test func badPrioritiesAreRejected() {
        #expect(throws: TreeError.self) { try Node(jsonText: #"{".value": 1, ".priority": true}"#) }
        #expect(throws: TreeError.self) { try Node(jsonText: #"{"a": 1, ".priority": {"b": 1}}"#) }
        #expect(throws: TreeError.self) { try Node(jsonText: #"{"a": 1, ".priority": [1]}"#) }
        #expect(throws: TreeError.self) { try Node(json: ["a": 1, ".priority": .number(.nan)]) }
    }

    @Test func depthCountsTheWrittenPath() throws {
        func nested(_ levels: Int) -> JSONValue {
            (0..<levels).reduce(JSONValue.number(1)) { inner, _ in ["k": inner] }
        }
        #expect(try Node(json: nested(32)).child(at: Path(keys: Array(repeating: ChildKey("k"), count: 32))) != .empty)
        #expect(throws: TreeError.self) { try Node(json: nested(33)) }

        let deep30 = Path(keys: (1...30).map { ChildKey("p\($0)") })
        #expect(try Node(json: nested(2), at: deep30) != .empty)
        let error = #expect(throws: TreeError.self) { try Node(json: nested(3), at: deep30) }
        guard case .invalidData(let path, _) = error else {
            Issue.record("expected invalidData, got \(String(describing: error))")
            return
        }
        #expect(path == deep30.child(Path("k/k/k")).wireString)
        #expect(try Node(json: 1, at: Path(keys: (1...32).map { ChildKey("p\($0)") })) == Node(.number(1)))
        #expect(throws: TreeError.self) { try Node(json: 1, at: Path(keys: (1...33).map { ChildKey("p\($0)") })) }
        // Arrays count as levels too.
        #expect(throws: TreeError.self) { try Node(json: [[1]], at: Path(keys: (1...31).map { ChildKey("p\($0)") })) }
    }

    @Test func nonFiniteNumbersAreRejected() {
        for value in [Double.infinity, -.infinity, .nan] {
            let error = #expect(throws: TreeError.self) { try Node(json: ["a": .number(value)]) }
            #expect(error == .invalidData(path: "a", reason: "number is not finite"))
        }
        // JSON text cannot spell them at all.
        for text in ["NaN", "Infinity", "-Infinity", "[1e400]"] {
            #expect(throws: TreeError.self, "\(text)") { try Node(jsonText: text) }
        }
    }

    @Test func stringLengthLimitIsInBytes() throws {
        let limit = TreeLimits.maxStringBytes
        #expect(limit == 10 * 1024 * 1024)
        let longest = String(repeating: "a", count: limit)
        #expect(try Node(json: .string(longest)).leafValue == .string(longest))
        let error = #expect(throws: TreeError.self) { try Node(json: ["s": .string(longest + "a")]) }
        #expect(error == .invalidData(path: "s", reason: "string is \(limit + 1) bytes long (at most \(limit))"))
        // Half as many two-byte characters plus one: under the limit in characters, over it in bytes.
        let wide = String(repeating: "é", count: limit / 2 + 1)
        #expect(throws: TreeError.self) { try Node(json: .string(wide)) }
    }

    @Test func unparsableTextIsInvalidJSON() {
        for text in ["", "{", "[1,", "{\"a\" 1}", "{'a': 1}", "tru", "01", "\"unterminated", "{\"a\":1}}"] {
            let error = #expect(throws: TreeError.self, "\(text)") { try Node(jsonText: text) }
            guard case .invalidJSON? = error else {
                Issue.record("\(text): expected invalidJSON, got \(String(describing: error))")
                continue
            }
        }
    }

    // MARK: JSONValue text

    @Test func parsesScalarsWithoutConfusingThem() throws {
        #expect(
            try JSONValue(parsing: "[1, true, 0, false, 1.5, -2, 1e3, null, \"1\"]")
                == [1, true, 0, false, 1.5, -2, 1000, nil, "1"])
        #expect(try JSONValue(parsing: "true") == true)
        #expect(try JSONValue(parsing: " 42 ") == 42)
    }

    @Test func stringEscapesAndUnicodeRoundTrip() throws {
        let text = #"{"k\"ey":"q\"b\\s/n\nt\tr\rf\fb\bc\u0001 é 🌳 \u00e9 \ud83c\udf33"}"#
        let value = try JSONValue(parsing: text)
        #expect(value == ["k\"ey": "q\"b\\s/n\nt\tr\rf\u{0C}b\u{08}c\u{01} é 🌳 é 🌳"])
        let serialized = value.serialized()
        #expect(serialized == #"{"k\"ey":"q\"b\\s/n\nt\tr\rf\fb\bc\u0001 é 🌳 é 🌳"}"#)
        #expect(try JSONValue(parsing: serialized) == value)
        #expect(JSONValue.string("\u{1F}\u{7F}").serialized() == "\"\\u001f\u{7F}\"")
    }

    @Test func objectMembersSerializeInKeyOrder() {
        let value: JSONValue = ["b": 1, "a": 2, "10": 3, "9": 4, "-1": 5]
        #expect(value.serialized() == #"{"-1":5,"9":4,"10":3,"a":2,"b":1}"#)
    }

    @Test func prettySerialization() {
        let value: JSONValue = ["a": [1, ["b": true]], "c": [:], "d": []]
        let expected = """
            {
              "a": [
                1,
                {
                  "b": true
                }
              ],
              "c": {},
              "d": []
            }
            """
        #expect(value.serialized(pretty: true) == expected)
        #expect(JSONValue.number(1).serialized(pretty: true) == "1")
    }

    @Test func numbersSerializeAsValidJSON() throws {
        let numbers: [Double] = [
            0.1, -1.5e-7, 1e21, 123_456_789.125, 9_007_199_254_740_994, -9_007_199_254_740_992, .leastNonzeroMagnitude,
        ]
        for number in numbers {
            let text = JSONValue.number(number).serialized()
            #expect(try JSONValue(parsing: text) == .number(number), "\(text)")
        }
        #expect(JSONValue.number(.infinity).serialized() == "null")
    }
}
