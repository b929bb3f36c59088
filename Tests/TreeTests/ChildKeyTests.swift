import PropertyBased
import Testing
import Tree

struct ChildKeyTests {
    // MARK: Validation

    @Test(arguments: [".", "$", "#", "[", "]", "/"])
    func forbiddenCharactersAreRejectedAndNamed(character: String) {
        for key in [character, "a\(character)", "\(character)b", "a\(character)b"] {
            #expect(throws: TreeError.invalidKey(key, reason: "contains '\(character)'")) {
                try ChildKey(validating: key)
            }
        }
    }

    @Test func controlCharactersAreRejected() {
        let controls = Array(0x00...0x1F) + [0x7F]
        for value in controls {
            let key = "a" + String(UnicodeScalar(UInt8(value))) + "b"
            #expect(
                throws: TreeError.invalidKey(key, reason: "contains a control character"),
                "U+\(String(value, radix: 16))"
            ) {
                try ChildKey(validating: key)
            }
        }
    }

    @Test func charactersOutsideTheForbiddenSetAreAccepted() throws {
        // U+0080 is a C1 control, but only U+0000–U+001F and U+007F are forbidden.
        for text in ["a", "-", "_", "a b", "ü", "🌳", "\u{80}", "%20", "!@^&*()+=,;:'\"<>?`~|\\{}", "-NjEtLV-"] {
            let key = try ChildKey(validating: text)
            #expect(key.string == text)
            #expect(key.isDataKey)
        }
    }

    @Test func emptyKeyIsRejected() {
        #expect(throws: TreeError.invalidKey("", reason: "is empty")) { try ChildKey(validating: "") }
    }

    @Test func lengthIsCountedInUTF8Bytes() throws {
        #expect(TreeLimits.maxKeyBytes == 768)
        // (text, UTF-8 bytes): one-, two- and four-byte characters filling the limit exactly.
        let accepted = [
            String(repeating: "a", count: 768),
            String(repeating: "é", count: 384),
            String(repeating: "🌳", count: 192),
        ]
        for text in accepted {
            #expect(text.utf8.count == 768)
            #expect(try ChildKey(validating: text).string == text)
        }
        let rejected = [
            String(repeating: "a", count: 769),
            String(repeating: "é", count: 384) + "a",
            String(repeating: "🌳", count: 192) + "a",
        ]
        for text in rejected {
            #expect(throws: TreeError.invalidKey(text, reason: "is 769 bytes long (at most 768)")) {
                try ChildKey(validating: text)
            }
        }
        // 385 two-byte characters: far fewer than 768 characters, but 770 bytes.
        let wide = String(repeating: "é", count: 385)
        #expect(throws: TreeError.invalidKey(wide, reason: "is 770 bytes long (at most 768)")) {
            try ChildKey(validating: wide)
        }
    }

    @Test func errorDescriptionNamesKeyAndReason() {
        let error = #expect(throws: TreeError.self) { try ChildKey(validating: "users.ada") }
        #expect(error?.description == #"invalid key "users.ada": contains '.'"#)
    }

    @Test func reservedAndSentinelKeysAreNotDataKeys() {
        #expect(!ChildKey.priority.isDataKey)
        #expect(ChildKey.priority.isPriorityKey)
        #expect(!ChildKey(".value").isDataKey)
        #expect(!ChildKey.info.isDataKey)
        #expect(!ChildKey.min.isDataKey)
        #expect(!ChildKey.max.isDataKey)
        #expect(ChildKey("users").isDataKey)
        #expect(!ChildKey("users").isPriorityKey)
    }

    // MARK: Ordering

    @Test func integerKeysSortFirstNumericallyThenStrings() {
        let expected: [ChildKey] = [
            "-2147483648",  // Int32.min is an integer
            "-5",
            "0",
            "-0",  // same value and length as "00"; string order decides
            "00",
            "1",
            "01",  // equal to 1 numerically, longer spelling second
            "001",
            "2",
            "10",
            "2147483647",
            "0000000000002147483647",  // leading zeros do not count towards the ten digits, but add length
            "-",
            "--1",
            "-2147483649",  // below Int32.min: a string
            "-a",
            "0a",
            "1.5",
            "10000000000",  // eleven significant digits: a string
            "2147483648",  // above Int32.max: a string
            "A",
            "Z",
            "a",
            "aa",
            "b",
        ]
        var shuffled = expected
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            shuffled.shuffle(using: &generator)
            #expect(shuffled.sorted() == expected)
        }
    }

    @Test func int32BoundsDecideIntegerOrString() {
        let integers = ["2147483647", "-2147483648", "0", "-0", "007", "-0000000000001", "00000000000000000000"]
        let strings = ["2147483648", "-2147483649", "99999999999", "+1", "1e3", " 1", "1 ", "٣", "-", "1-"]
        for text in integers {
            #expect(isInteger(text), "\(text) should read as an integer")
        }
        for text in strings {
            #expect(!isInteger(text), "\(text) should read as a string")
        }
        #expect(ChildKey("2") < ChildKey("10"))
        #expect(ChildKey("1") < ChildKey("01"))
        #expect(ChildKey("-5") < ChildKey("0"))
        #expect(ChildKey("2147483647") < ChildKey("-2147483649"))
        #expect(ChildKey("10") < ChildKey("a"))
    }

    /// Integer keys sort before every string key, even the (otherwise invalid) empty one.
    private func isInteger(_ text: String) -> Bool { ChildKey(text) < ChildKey("") }

    @Test func distinctKeysNeverCompareEqual() {
        // "-0" and "00" read as the same integer with the same length; they are still different keys.
        #expect(ChildKey.compare("-0", "00") != 0)
        #expect(ChildKey.compare("-000", "0000") != 0)
        #expect(ChildKey("-0") != ChildKey("00"))
        #expect(ChildKey.compare("007", "007") == 0)
    }

    @Test func sentinelsSortOutsideEveryKey() {
        let keys: [ChildKey] = ["-2147483648", "0", "a", "zzz", "\u{10FFFF}", "[MAX_NAMF]", "[MIN_NAMD]"]
        for key in keys {
            #expect(ChildKey.min < key)
            #expect(key < ChildKey.max)
            #expect(ChildKey.compare(.min, key) < 0)
            #expect(ChildKey.compare(.max, key) > 0)
        }
        #expect(ChildKey.min < ChildKey.max)
        #expect(ChildKey.compare(.min, .min) == 0)
        #expect(ChildKey.compare(.max, .max) == 0)
        #expect(ChildKey(ChildKey.minName) == .min)
        #expect(ChildKey(ChildKey.maxName) == .max)
    }

    @Test func matchesReferenceOrder() async {
        await propertyCheck(count: 2000, input: KeyGen.key, KeyGen.key) { a, b in
            let actual = ChildKey.compare(ChildKey(a), ChildKey(b)).signum()
            #expect(actual == ReferenceKeyOrder.compare(a, b), "\(a) vs \(b)")
            #expect((ChildKey(a) < ChildKey(b)) == (actual < 0))
            #expect((ChildKey(a) == ChildKey(b)) == (actual == 0))
        }
    }

    @Test func isATotalOrder() async {
        await propertyCheck(count: 2000, input: KeyGen.key, KeyGen.key, KeyGen.key) { a, b, c in
            let (ka, kb, kc) = (ChildKey(a), ChildKey(b), ChildKey(c))
            // Antisymmetry, and equality only for identical keys.
            #expect(ChildKey.compare(ka, kb).signum() == -ChildKey.compare(kb, ka).signum(), "\(a) vs \(b)")
            #expect((ChildKey.compare(ka, kb) == 0) == (a == b), "\(a) vs \(b)")
            // Transitivity, in whichever order the three happen to fall.
            let sorted = [ka, kb, kc].sorted()
            #expect(sorted[0] <= sorted[1] && sorted[1] <= sorted[2])
            #expect(sorted[0] <= sorted[2], "\(sorted)")
            if ka < kb, kb < kc { #expect(ka < kc, "\(a) < \(b) < \(c)") }
            if ka > kb, kb > kc { #expect(ka > kc, "\(a) > \(b) > \(c)") }
        }
    }
}

/// Random key spellings that stress the ordering rules.
enum KeyGen {
    /// Magnitudes around the interesting boundaries: small numbers, `Int32` limits, ten vs eleven digits.
    static let magnitude = zip(
        Gen.int(in: 0...3),
        Gen.int(in: 0...20),
        Gen.int(in: 2_147_483_638...2_147_483_658),
        Gen.int(in: 9_999_999_990...10_000_000_010),
        Gen.int(in: 0...Int(Int32.max))
    ).map { choice in
        switch choice.0 {
        case 0: choice.1
        case 1: choice.2
        case 2: choice.3
        default: choice.4
        }
    }

    /// Integer-like spellings: an optional minus sign, leading zeros, then a magnitude.
    static let integerLike = zip(Gen.bool(0.3), Gen.int(in: 0...12).map { max(0, $0 - 9) }, magnitude).map {
        negative, zeros, magnitude in
        (negative ? "-" : "") + String(repeating: "0", count: zeros) + String(magnitude)
    }

    /// Short strings over digits, letters and a minus sign (so near-integers such as "1-" or "-a" occur).
    static let shortString = Gen<Character?>.element(of: Array("01-9aAzZ_~é") as [Character]).map { $0! }
        .string(of: 1...4)

    /// Spellings at the edges of the rules, drawn often enough that pairs and triples of them meet.
    static let edgeCase = Gen<String?>.element(of: edgeCases).map { $0! }
    static let edgeCases = [
        "0", "-0", "00", "-00", "000", "1", "01", "-1", "-01", "2147483647", "02147483647", "2147483648",
        "-2147483648", "-2147483649", "-", "a", "A", "é",
    ]

    /// A mix of all three.
    static let key = zip(Gen.int(in: 0...2), integerLike, shortString, edgeCase).map { choice in
        switch choice.0 {
        case 0: choice.1
        case 1: choice.2
        default: choice.3
        }
    }
}

/// Key order written straight from PROTOCOL.md, independently of the implementation.
enum ReferenceKeyOrder {
    /// The value of a key matching `^-?(0*)\d{1,10}$` that lies within `Int32`, else `nil`.
    static func integer(_ key: String) -> Int64? {
        var digits = Substring(key)
        let negative = digits.hasPrefix("-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        // `0*` may take all leading zeros, leaving at most ten digits for `\d{1,10}`.
        let significant = digits.drop { $0 == "0" }
        guard significant.count <= 10, let magnitude = Int64(significant.isEmpty ? "0" : String(significant)) else {
            return nil
        }
        let value = negative ? -magnitude : magnitude
        return (Int64(Int32.min)...Int64(Int32.max)).contains(value) ? value : nil
    }

    /// -1, 0 or 1.
    static func compare(_ a: String, _ b: String) -> Int {
        switch (integer(a), integer(b)) {
        case (let x?, let y?):
            if x != y { return x < y ? -1 : 1 }
            if a.count != b.count { return a.count < b.count ? -1 : 1 }
            // Same number, same length ("-0" and "00"): still distinct keys, so fall back to string order.
            return codePointOrder(a, b)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return codePointOrder(a, b)
        }
    }

    static func codePointOrder(_ a: String, _ b: String) -> Int {
        let (x, y) = (a.unicodeScalars.map(\.value), b.unicodeScalars.map(\.value))
        if x == y { return 0 }
        return x.lexicographicallyPrecedes(y) ? -1 : 1
    }
}
