import Testing
import Tree

@testable import ServerStorage

struct StoredValueTests {
    @Test(arguments: [
        LeafValue.bool(true), .bool(false), .number(0), .number(-17), .number(0.1), .number(1e-7), .number(-1e300),
        .number(18_014_398_509_481_984), .string(""), .string("plain"), .string("\"quoted\" \\ back/slash"),
        .string("\n\r\t\u{08}\u{0C}\u{01}\u{1F}"), .string("é e\u{301} 😀 \u{FFFF}"), .string("true"), .string("12"),
    ])
    func leafRoundTrip(leaf: LeafValue) {
        let text = StoredValue.text(of: leaf)
        #expect(StoredValue.leaf(from: text) == leaf, "\(text)")
        // The stored text is JSON that the Tree module reads back to the same value.
        #expect((try? JSONValue(parsing: text)) == leaf.json)
    }

    @Test func decodesEscapesOtherWritersUse() {
        #expect(StoredValue.decodeString(#""\u00e9\/\ud83d\ude00""#) == "é/😀")
        #expect(StoredValue.decodeString(#""\ud83d""#) == nil)
        #expect(StoredValue.decodeString(#""\x""#) == nil)
        #expect(StoredValue.leaf(from: "nul") == nil)
        #expect(StoredValue.leaf(from: "") == nil)
        #expect(StoredValue.leaf(from: "1e999") == nil)
        #expect(StoredValue.priority(from: "true") == nil)
        #expect(StoredValue.priority(from: "2") == .number(2))
    }
}
