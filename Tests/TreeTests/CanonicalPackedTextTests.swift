import Foundation
import PropertyBased
import Testing

@testable import Tree

/// Bytes taken as packed text without parsing (an import's records) must be exactly the text the
/// server packs the same object as; anything else must be left to the parser.
struct CanonicalPackedTextTests {
    @Test func thePackedTextOfAnObjectIsTakenAsItStands() async {
        await propertyCheck(count: 400, input: PackedObjectTests.object) { json in
            guard case .object(let members) = json, let text = PackedObject.text(of: members, depth: 1) else { return }
            let taken = Self.canonical(Array(text.utf8), depth: 1)
            // Only a string with an escape is left to the parser.
            #expect(taken == text || (taken == nil && text.contains("\\")), "\(text)")
        }
    }

    @Test func anyOtherSpellingIsLeftToTheParserOrMeansTheSame() async {
        await propertyCheck(count: 1500, input: PackedObjectTests.object, Gen.int(in: 0...Int.max)) { json, seed in
            var rng = Xoshiro(seed: (UInt64(truncatingIfNeeded: seed), 0x9E37_79B9, 7, 11))
            var bytes = Array(Self.spell(json, &rng).utf8)
            if Int.random(in: 0...3, using: &rng) == 0, !bytes.isEmpty {
                // A damaged text: a byte changed, or the text cut short.
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                if Bool.random(using: &rng) {
                    bytes[at] = [0x22, 0x7B, 0x7D, 0x2C, 0x3A, 0xFF, 0xC3, 0x5C, 0x30].randomElement(using: &rng)!
                } else {
                    bytes.removeSubrange(at...)
                }
            }
            Self.expectTakenOnlyAsItsPackedText(bytes, depth: 1)
        }
    }

    @Test(arguments: [
        #"{"a":1.0}"#, #"{"a":1e2}"#, #"{"a":-0}"#, #"{"a":01}"#, #"{"a":1234567890123456}"#, #"{"a":"\u0061"}"#,
        #"{"a":"\/"}"#, #"{"a":null}"#, #"{"a":[1]}"#, #"{"b":1,"a":2}"#, #"{"a":1,"a":2}"#, #"{"a" :1}"#,
        #"{"a":1} "#, #"{}"#, #"{"a":{}}"#, #"{"0":1}"#, #"{".priority":1}"#, #"{"a.b":1}"#, #"{"a":tru}"#,
        #"{"a":true"#, #"{"a":"x}"#,
    ])
    func textsThatAreNotPackedTextAreNotTaken(_ text: String) {
        #expect(Self.canonical(Array(text.utf8), depth: 1) == nil, "\(text)")
    }

    @Test func numbersAreTakenOnlyAsTheServerSpellsThem() {
        for text in [#"{"a":0}"#, #"{"a":-12}"#, #"{"a":0.1}"#, #"{"a":-2.5}"#, #"{"a":1e-07}"#, #"{"a":1e+300}"#] {
            Self.expectTakenOnlyAsItsPackedText(Array(text.utf8), depth: 1)
        }
        #expect(Self.canonical(Array(#"{"a":0.1}"#.utf8), depth: 1) != nil)
        #expect(Self.canonical(Array(#"{"a":123456789012345}"#.utf8), depth: 1) != nil)
    }

    @Test func theLimitsArePackedObjectsLimits() {
        let deep = #"{"a":{"b":1}}"#
        #expect(Self.canonical(Array(deep.utf8), depth: TreeLimits.maxDepth - 2) != nil)
        #expect(Self.canonical(Array(deep.utf8), depth: TreeLimits.maxDepth - 1) == nil)
        #expect(Self.canonical(Array(deep.utf8), depth: TreeLimits.maxDepth) == nil)
        let members = (0..<PackedObject.maxMembers).map { #""k\#(String(format: "%02d", $0))":true"# }
        #expect(Self.canonical(Array(("{" + members.joined(separator: ",") + "}").utf8), depth: 1) != nil)
        let tooMany = members + [#""k99":true"#]
        #expect(Self.canonical(Array(("{" + tooMany.joined(separator: ",") + "}").utf8), depth: 1) == nil)
        for length in (PackedObject.maxBytes - 12)...(PackedObject.maxBytes - 4) {
            let text = #"{"a":""# + String(repeating: "x", count: length) + #""}"#
            Self.expectTakenOnlyAsItsPackedText(Array(text.utf8), depth: 1)
        }
    }

    // MARK: The members of an update's body

    @Test func anObjectsMembersReadAloneAsInTheWhole() async {
        await propertyCheck(count: 800, input: PackedObjectTests.object, Gen.int(in: 0...Int.max)) { json, seed in
            var rng = Xoshiro(seed: (UInt64(truncatingIfNeeded: seed), 0x9E37_79B9, 7, 11))
            var bytes = Array(Self.spell(json, &rng).utf8)
            if Bool.random(using: &rng), !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0...2, using: &rng) {
                case 0:
                    bytes[at] = [0x22, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0xFF, 0x5C, 0x20].randomElement(using: &rng)!
                case 1: bytes.removeSubrange(at...)
                default: bytes.insert(contentsOf: Array(#"[{"x"#.utf8), at: at)
                }
            }
            let whole = try? JSONValue(parsing: Data(bytes))
            let read = Self.readMembers(bytes)
            #expect(read == whole, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func aMemberNestsAsDeepAsInTheWhole() {
        for levels in [JSONScanner.maxNesting - 2, JSONScanner.maxNesting - 1, JSONScanner.maxNesting] {
            let text = #"{"a":"# + String(repeating: "[", count: levels) + String(repeating: "]", count: levels) + "}"
            let bytes = Array(text.utf8)
            #expect(Self.readMembers(bytes) == (try? JSONValue(parsing: Data(bytes))), "\(levels) levels")
        }
    }

    // MARK: Helpers

    private static func canonical(_ bytes: [UInt8], depth: Int) -> String? {
        bytes.withUnsafeBufferPointer { PackedObject.canonicalText($0, depth: depth) }
    }

    /// Taken, the bytes must be valid JSON of an object whose packed text they are.
    private static func expectTakenOnlyAsItsPackedText(_ bytes: [UInt8], depth: Int) {
        guard let taken = canonical(bytes, depth: depth) else { return }
        let text = String(decoding: bytes, as: UTF8.self)
        guard case .object(let members)? = try? JSONValue(parsing: Data(bytes)) else {
            Issue.record("taken but not a JSON object: \(text)")
            return
        }
        #expect(taken == PackedObject.text(of: members, depth: depth), "\(text)")
        #expect(Array(taken.utf8) == bytes)
    }

    /// The object the members of `bytes` read one by one make (a repeated name keeps its last
    /// value, as in the whole), or `nil` when one of them, or the object, is not JSON.
    private static func readMembers(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { buffer -> JSONValue? in
            guard let object = JSONObjectMembers(buffer) else { return nil }
            var members: [String: JSONValue] = [:]
            for member in object.members {
                guard let value = try? JSONObjectMembers.parseValue(UnsafeBufferPointer(rebasing: buffer[member.value]))
                else { return nil }
                members[member.name] = value
            }
            return .object(members)
        }
    }

    /// `json` spelled as JSON, now and then otherwise than the server would: spaces, members out of
    /// order, numbers and strings spelled another way.
    private static func spell(_ json: JSONValue, _ rng: inout Xoshiro) -> String {
        let odd = Int.random(in: 0...2, using: &rng) == 0
        func space() -> String {
            odd && Int.random(in: 0...5, using: &rng) == 0 ? [" ", "\n", "\t"].randomElement(using: &rng)! : ""
        }
        switch json {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let value):
            let text = JSONValue.format(number: value)
            guard odd, Int.random(in: 0...3, using: &rng) == 0 else { return text }
            return [text + ".0", text + "e0", "\(value)", "0" + text, text + "E+00"].randomElement(using: &rng)!
        case .string(let value):
            var text = ""
            JSONValue.writeString(value, to: &text)
            if odd, Int.random(in: 0...3, using: &rng) == 0, value.first == "s" {
                text = #""\u0073"# + text.dropFirst(2)
            }
            return text
        case .array(let elements):
            return "[" + elements.map { spell($0, &rng) }.joined(separator: ",") + "]"
        case .object(let members):
            var names = members.keys.sorted { ChildKey.compare(ChildKey($0), ChildKey($1)) < 0 }
            if odd, Int.random(in: 0...3, using: &rng) == 0 { names.shuffle(using: &rng) }
            let parts = names.map { name -> String in
                var key = ""
                JSONValue.writeString(name, to: &key)
                return space() + key + space() + ":" + space() + spell(members[name] ?? .null, &rng) + space()
            }
            return "{" + parts.joined(separator: ",") + "}"
        }
    }
}
