/// The name of one child of a node, ordered as Firebase orders keys.
///
/// Keys that read as 32-bit integers (`"-5"`, `"007"`, `"42"`) sort first, numerically, with the
/// shorter spelling first on a tie; every other key sorts after them by string comparison
/// (Unicode code points). Two sentinels, ``min`` and ``max``, sort before and after every key;
/// queries use them as open bounds.
///
/// ```swift
/// let key = try ChildKey(validating: "users")
/// ChildKey("2") < ChildKey("10")   // true: integer keys compare numerically
/// ChildKey("10") < ChildKey("a")   // true: integer keys come first
/// ```
public struct ChildKey: Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The key as written.
    public let string: String
    @usableFromInline let rank: Rank
    @usableFromInline let integerValue: Int32?

    @usableFromInline enum Rank: UInt8, Sendable { case min, normal, max }

    /// A key built without validation; use it for keys the program itself spells.
    public init(_ string: String) {
        self.string = string
        if string.utf8.first != UInt8(ascii: "[") {
            rank = .normal
            integerValue = ChildKey.parseInteger(string)
        } else if string == ChildKey.minName {
            rank = .min
            integerValue = nil
        } else if string == ChildKey.maxName {
            rank = .max
            integerValue = nil
        } else {
            rank = .normal
            integerValue = ChildKey.parseInteger(string)
        }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// A key checked against the rules for data keys: 1 to 768 UTF-8 bytes, none of
    /// `.` `$` `#` `[` `]` `/`, no control characters.
    public init(validating string: String) throws(TreeError) {
        if let reason = ChildKey.problem(with: string) {
            throw .invalidKey(string, reason: reason)
        }
        self.init(string)
    }

    public var description: String { string }

    /// Sorts before every key.
    public static let min = ChildKey(minName)
    /// Sorts after every key.
    public static let max = ChildKey(maxName)
    /// The pseudo-child that holds a node's priority.
    public static let priority = ChildKey(".priority")
    /// The root of the read-only connection-state tree.
    public static let info = ChildKey(".info")

    /// Wire spelling of ``min`` (`startAfter` / `endBefore` sentinels).
    public static let minName = "[MIN_NAME]"
    /// Wire spelling of ``max``.
    public static let maxName = "[MAX_NAME]"

    public var isPriorityKey: Bool { string == ".priority" }
    /// Whether this key may name stored data (it is neither a sentinel nor a `.`-key).
    public var isDataKey: Bool { rank == .normal && !string.hasPrefix(".") }

    /// Why `string` cannot be a data key, or `nil` when it can.
    public static func problem(with string: String) -> String? {
        let utf8 = string.utf8
        if utf8.isEmpty { return "is empty" }
        if utf8.count > TreeLimits.maxKeyBytes {
            return "is \(utf8.count) bytes long (at most \(TreeLimits.maxKeyBytes))"
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "."): return "contains '.'"
            case UInt8(ascii: "$"): return "contains '$'"
            case UInt8(ascii: "#"): return "contains '#'"
            case UInt8(ascii: "["): return "contains '['"
            case UInt8(ascii: "]"): return "contains ']'"
            case UInt8(ascii: "/"): return "contains '/'"
            case 0...0x1F, 0x7F: return "contains a control character"
            default: continue
            }
        }
        return nil
    }

    /// The integer a key reads as (`^-?0*\d{1,10}$` within `Int32`), used for ordering.
    @usableFromInline static func parseInteger(_ string: String) -> Int32? {
        var utf8 = Substring(string).utf8[...]
        var negative = false
        if utf8.first == UInt8(ascii: "-") {
            negative = true
            utf8 = utf8.dropFirst()
        }
        if utf8.isEmpty { return nil }
        var leadingZeros = 0
        for byte in utf8 {
            guard byte == UInt8(ascii: "0") else { break }
            leadingZeros += 1
        }
        let digitsAfterZeros = utf8.count - leadingZeros
        // The pattern allows any run of zeros followed by one to ten digits; zeros count as digits too.
        if digitsAfterZeros > 10 { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            if value > Int64(Int32.max) + 1 { return nil }
        }
        if negative { value = -value }
        return Int32(exactly: value)
    }

    @inlinable public static func < (lhs: ChildKey, rhs: ChildKey) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Keys are equal when their UTF-8 bytes are, not merely canonically equivalent.
    @inlinable public static func == (lhs: ChildKey, rhs: ChildKey) -> Bool {
        compareStrings(lhs.string, rhs.string) == 0
    }

    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Three-way comparison in key order: negative, zero or positive.
    @inlinable public static func compare(_ a: ChildKey, _ b: ChildKey) -> Int {
        if a.rank != b.rank { return a.rank.rawValue < b.rank.rawValue ? -1 : 1 }
        if a.rank != .normal { return 0 }
        switch (a.integerValue, b.integerValue) {
        case (let x?, let y?):
            if x != y { return x < y ? -1 : 1 }
            let (la, lb) = (a.string.utf8.count, b.string.utf8.count)
            if la != lb { return la < lb ? -1 : 1 }
            // Only "-0" and "00" (and longer zero spellings) get here as distinct keys; they must not
            // compare equal, or a child map would take one for the other.
            return compareStrings(a.string, b.string)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return compareStrings(a.string, b.string)
        }
    }
}

/// Three-way comparison of strings by Unicode code point (UTF-8 byte order).
@inlinable func compareStrings(_ a: String, _ b: String) -> Int {
    let contiguous = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y in compareBytes(x, y) }
    }
    if let contiguous, let result = contiguous { return result }
    if a.utf8.elementsEqual(b.utf8) { return 0 }
    return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
}

/// Three-way comparison of byte strings: the first differing byte decides, then the length.
@inlinable func compareBytes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
    let count = Swift.min(x.count, y.count)
    var index = 0
    while index < count {
        let (p, q) = (x[index], y[index])
        if p != q { return p < q ? -1 : 1 }
        index += 1
    }
    return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
}
