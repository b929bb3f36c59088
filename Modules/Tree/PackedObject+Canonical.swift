/// Recognising JSON that already is packed text, so that it needs no parsing.
///
/// An export (Canopy's, Firebase's) writes records compact, members in key order, leaves spelled
/// as the server spells them: exactly ``PackedObject`` text. An import sends those bytes back, and
/// reading each record into a dictionary only to write the same bytes again was most of the cost
/// of a write that adds many of them.
extension PackedObject {
    /// The packed text of the object `bytes` hold, lying `depth` levels deep, when the bytes are
    /// that text already; `nil` when they are not, or in any doubt (a string with an escape, a
    /// number the server would spell otherwise): the caller then builds the node from parsed JSON,
    /// which packs the same object when it can.
    static func canonicalText(_ bytes: UnsafeBufferPointer<UInt8>, depth: Int) -> String? {
        guard isCanonical(bytes, depth: depth) else { return nil }
        return validUTF8(bytes)
    }

    /// Whether `bytes` are, structurally, the packed text of an object lying `depth` levels deep
    /// (``canonicalText(_:depth:)`` without its check that they are UTF-8); `false` also in doubt.
    static func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>, depth: Int) -> Bool {
        guard bytes.count <= maxBytes else { return false }
        var reader = CanonicalReader(bytes: bytes)
        return reader.object(depth: depth) && reader.position == bytes.count
    }

    /// `bytes` as a string when they are valid UTF-8. ASCII, what most records are, is checked
    /// here; `String(validating:)` is generic, and looking up its metadata on every call cost more
    /// than the check.
    static func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var high: UInt8 = 0
        for byte in bytes { high |= byte }
        return high < 0x80 ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }
}

extension Node {
    /// The packed node of the object `bytes` hold at a location `depth` levels deep, when they are
    /// exactly its packed text (see ``packedText``); `nil` otherwise, when the node must be built
    /// from parsed JSON (``init(json:at:existing:serverValues:packing:)``, which gives the same
    /// node for these bytes).
    package init?(canonicalPackedJSON bytes: UnsafeBufferPointer<UInt8>, depth: Int) {
        guard let text = PackedObject.canonicalText(bytes, depth: depth) else { return nil }
        self.init(packedObject: text)
    }
}

/// Checks bytes against the packed-text grammar, byte by byte; every read is bounds-checked, as the
/// bytes come from a client.
private struct CanonicalReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    private func at(_ byte: Unicode.Scalar) -> Bool {
        position < bytes.count && bytes[position] == UInt8(ascii: byte)
    }

    mutating func object(depth: Int) -> Bool {
        guard depth < TreeLimits.maxDepth, at("{") else { return false }
        position += 1
        var previous: ChildKey?
        var members = 0
        while true {
            guard let name = plainString(), at(":") else { return false }
            position += 1
            guard let text = PackedObject.validUTF8(name), ChildKey.problem(with: text) == nil else {
                return false
            }
            let key = ChildKey(text)
            guard key.integerValue == nil, previous.map({ ChildKey.compare($0, key) < 0 }) ?? true else { return false }
            previous = key
            members += 1
            guard members <= PackedObject.maxMembers, value(depth: depth) else { return false }
            if at(",") {
                position += 1
                continue
            }
            guard at("}") else { return false }
            position += 1
            return true
        }
    }

    private mutating func value(depth: Int) -> Bool {
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "\""): return plainString() != nil
        case UInt8(ascii: "{"): return object(depth: depth + 1)
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return false
        }
    }

    /// The bytes of a string written without escapes (as the server writes one that needs none).
    private mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
        guard at("\"") else { return nil }
        position += 1
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return UnsafeBufferPointer(rebasing: bytes[start..<position - 1])
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            position += 1
        }
        return nil
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for offset in 0..<count where bytes[position + offset] != expected[offset] { return false }
        position += count
        return true
    }

    /// A number spelled as ``JSONValue/format(number:)`` spells it: an integer of up to 15 digits
    /// without leading zeros (exact as a `Double`), or any other spelling the formatter gives back.
    private mutating func number() -> Bool {
        let start = position
        let negative = at("-")
        if negative { position += 1 }
        let digitsStart = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
            position += 1
        }
        let digits = position - digitsStart
        guard digits > 0 else { return false }
        if at(".") || at("e") || at("E") {
            while position < bytes.count, Self.numberBytes.contains(bytes[position]) { position += 1 }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            guard let value = Double(text), value.isFinite, value != 0 else { return false }
            return JSONValue.format(number: value) == text
        }
        guard digits <= 15 else { return false }
        // "0" alone; "-0" is not packed and "01" is not JSON.
        return bytes[digitsStart] != UInt8(ascii: "0") || (digits == 1 && !negative)
    }

    private static let numberBytes: Set<UInt8> = Set("0123456789.eE+-".utf8)
}
