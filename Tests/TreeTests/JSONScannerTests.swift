import Foundation
import Testing
import Tree

/// `JSONValue(parsing:)` reads strict JSON: these cases pin down what it accepts and refuses.
struct JSONScannerTests {
    @Test func readsEveryKindOfValue() throws {
        let value = try JSONValue(parsing: #" { "a" : [1, -2.5e3, 0, -0, true, false, null, "x"], "b": {}, "c": [] } "#)
        #expect(
            value == ["a": [1, -2500, 0, 0, true, false, nil, "x"], "b": .object([:]), "c": .array([])])
    }

    @Test func keepsNestedObjectsApartAndTheLastOfARepeatedName() throws {
        let value = try JSONValue(parsing: #"{"a":{"b":{"c":1},"d":[{"e":2},{}]},"x":1,"f":{"g":null},"x":2}"#)
        #expect(value == ["a": ["b": ["c": 1], "d": [["e": 2], .object([:])]], "f": ["g": nil], "x": 2])
    }

    @Test(arguments: [
        "0", "-0", "7", "-42", "123456789012345", "-999999999999999", "1234567890123456", "9007199254740993",
        "12345678901234567890", "1.5", "-2.25e3", "1E2", "0.1",
    ])
    func readsNumbersAsTheStandardConversionDoes(text: String) throws {
        let expected = try #require(Double(text))
        guard case .number(let value) = try JSONValue(parsing: text) else {
            Issue.record("\(text) did not read as a number")
            return
        }
        #expect(value == expected && value.sign == expected.sign, "\(text)")
    }

    @Test func decodesStringEscapesAndSurrogatePairs() throws {
        let value = try JSONValue(parsing: #"["\"\\\/\b\f\n\r\t", "\u00e9\u4e2d", "\ud83d\ude00", "é中😀"]"#)
        #expect(value == ["\"\\/\u{08}\u{0C}\n\r\t", "é中", "😀", "é中😀"])
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "\"abc", "\"\u{01}\"",
        "\"\\x\"", "\"\\ud83d\"", "\"\\ude00\"", "[1] 2", "{a:1}", "{\"a\" 1}", "1e400", "NaN",
    ])
    func refusesInvalidText(_ text: String) {
        #expect(throws: TreeError.self) { try JSONValue(parsing: text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: TreeError.self) { try JSONValue(parsing: Data([0x22, 0xFF, 0xFE, 0x22])) }
    }

    @Test func limitsNesting() throws {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: TreeError.self) { try JSONValue(parsing: deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        _ = try JSONValue(parsing: fine)
    }

    @Test func saysWhereTheTextWentWrong() {
        #expect(throws: TreeError.invalidJSON(reason: "expected ',' or ']' at byte 3")) {
            try JSONValue(parsing: "[1 2]")
        }
    }

    @Test func roundTripsThroughSerialization() throws {
        let value: JSONValue = ["k": ["s": "quote \" and \\ and \u{1} and é", "n": 1.5, "i": -7, "a": [nil, true]]]
        #expect(try JSONValue(parsing: value.serialized()) == value)
        #expect(try JSONValue(parsing: value.serialized(pretty: true)) == value)
    }

    // MARK: JSONReader

    @Test func readerVisitsMembersInTextOrderAndReadsNestedObjects() throws {
        let text = #" {"a": 1, "b": {"c": [true, null], "d": {}}, "a": "again"} "#
        var visited: [String] = []
        try JSONReader.read(text) { (reader) throws(TreeError) in
            try reader.readObject { (name, reader) throws(TreeError) in
                if name == "b" {
                    try reader.readObject { (inner, reader) throws(TreeError) in
                        visited.append("b.\(inner)=\(try reader.readValue().serialized())")
                    }
                } else {
                    visited.append("\(name)=\(try reader.readValue().serialized())")
                }
            }
        }
        #expect(visited == ["a=1", "b.c=[true,null]", "b.d={}", #"a="again""#])
    }

    @Test func readerRefusesWhatTheParserRefuses() {
        func members(_ text: String) throws(TreeError) {
            try JSONReader.read(text) { (reader) throws(TreeError) in
                try reader.readObject { (_, reader) throws(TreeError) in _ = try reader.readValue() }
            }
        }
        #expect(throws: TreeError.invalidJSON(reason: "unexpected text after the value at byte 9")) {
            try members(#"{"a": 1} 2"#)
        }
        #expect(throws: TreeError.invalidJSON(reason: "expected an object at byte 0")) { try members("[1]") }
        #expect(throws: TreeError.self) { try members(#"{"a": 1"#) }
        #expect(throws: TreeError.self) { try members(#"{"a" 1}"#) }
        #expect(throws: TreeError.self) { try members(#"{a: 1}"#) }
        // A member whose value the body leaves unread is an error, not silently skipped.
        #expect(throws: TreeError.invalidJSON(reason: "expected ',' or '}' at byte 6")) {
            try JSONReader.read(#"{"a": 1}"#) { (reader) throws(TreeError) in
                try reader.readObject { (_, _) throws(TreeError) in }
            }
        }
        let deep = String(repeating: #"{"a":"#, count: 600) + "1" + String(repeating: "}", count: 600)
        #expect(throws: TreeError.self) {
            try JSONReader.read(deep) { (reader) throws(TreeError) in _ = try reader.readValue() }
        }
    }
}
