import Testing
import Tree

@testable import CanopyCLI

/// The import's reader scans a string's plain ASCII eight bytes at a time: a quote, an escape, a
/// control character or a non-ASCII byte at any place in the word must end the run exactly there.
struct JSONStreamReaderTests {
    /// What may stand inside a string, each with whether a reader must refuse it.
    private static let specials: [(text: String, refused: Bool)] = [
        (#"\""#, false), (#"\\"#, false), (#"\n"#, false), (#"\u00e9"#, false), (#"\ud83d\ude00"#, false),
        ("\u{e9}", false), ("\u{1F600}", false), ("\u{7F}", false), (" ", false), ("~", false),
        ("\u{1}", true), ("\u{1F}", true), ("\t", true), (#"\x"#, true),
    ]

    @Test func everyByteThatEndsARunIsFoundWhereverItStands() throws {
        for length in 0..<20 {
            for offset in 0...length {
                for (special, refused) in Self.specials {
                    let inner =
                        String(repeating: "a", count: offset) + special
                        + String(repeating: "b", count: length - offset)
                    let text = "\"" + inner + "\""
                    let scalar = Self.readString(text)
                    if refused {
                        #expect(scalar == nil, "\(text.debugDescription) was taken")
                        continue
                    }
                    guard case .string(let decoded)? = try? JSONValue(parsing: text) else {
                        Issue.record("\(text.debugDescription) is not a JSON string")
                        continue
                    }
                    #expect(scalar?.decodedLength == decoded.utf8.count, "\(text.debugDescription)")
                }
            }
        }
    }

    @Test func aStringIsReadUpToItsClosingQuoteAndNoFurther() throws {
        for length in 0..<20 {
            let text = #"{"k":""# + String(repeating: "x", count: length) + #"","n":1}"#
            let bytes = Array(text.utf8)
            let keys = try bytes.withUnsafeBytes { buffer throws(JSONSyntaxError) -> [String] in
                let reader = JSONStreamReader(bytes: buffer)
                #expect(try reader.peekValue() == .object)
                try reader.enterObject()
                var keys: [String] = []
                while let key = try reader.nextKey(first: keys.isEmpty) {
                    keys.append(key)
                    _ = try reader.readScalar()
                }
                try reader.expectEnd()
                return keys
            }
            #expect(keys == ["k", "n"])
        }
    }

    private static func readString(_ text: String) -> JSONStreamReader.Scalar? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { buffer in
            let reader = JSONStreamReader(bytes: buffer)
            guard (try? reader.peekValue()) == .string, let scalar = try? reader.readScalar(),
                (try? reader.expectEnd()) != nil
            else { return nil }
            return scalar
        }
    }
}
