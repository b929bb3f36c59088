/// The members of a JSON object text with each value left as its bytes, for a reader that builds
/// nodes from most values without parsing them (see ``Node/init(canonicalPackedJSON:depth:)``)
/// and parses the others alone (``parseValue(_:)``).
///
/// ```swift
/// body.withUnsafeBufferPointer { bytes in
///     for member in JSONObjectMembers(bytes)?.members ?? [] { … bytes[member.value] … }
/// }
/// ```
package struct JSONObjectMembers {
    /// The members in document order: each name decoded, each value's byte range, not yet checked.
    package let members: [(name: String, value: Range<Int>)]

    /// The members of the object `bytes` hold (whitespace around it allowed), or `nil` when they do
    /// not hold one object: its names and punctuation are checked here, its values only delimited.
    /// A value's range may hold anything but `,` or `}` outside strings, and is valid only once
    /// read (``parseValue(_:)`` or ``PackedObject``).
    package init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        var scanner = JSONScanner(bytes, isValidUTF8: false)
        scanner.skipWhitespace()
        guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "{") else { return nil }
        scanner.position += 1
        var members: [(name: String, value: Range<Int>)] = []
        scanner.skipWhitespace()
        if scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "}") {
            scanner.position += 1
        } else {
            while true {
                scanner.skipWhitespace()
                guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "\""),
                    let name = try? scanner.string()
                else { return nil }
                scanner.skipWhitespace()
                guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: ":") else { return nil }
                scanner.position += 1
                scanner.skipWhitespace()
                let start = scanner.position
                guard Self.skipValue(bytes, &scanner.position), scanner.position > start else { return nil }
                members.append((name, start..<scanner.position))
                scanner.skipWhitespace()
                guard scanner.position < bytes.count else { return nil }
                if bytes[scanner.position] == UInt8(ascii: ",") {
                    scanner.position += 1
                    continue
                }
                guard bytes[scanner.position] == UInt8(ascii: "}") else { return nil }
                scanner.position += 1
                break
            }
        }
        scanner.skipWhitespace()
        guard scanner.position == bytes.count else { return nil }
        self.members = members
    }

    /// Moves `position` past one value: to the `,`, `}` or whitespace after it. `false` when the
    /// bytes end inside it. Brackets are counted, not matched: a value that does not nest right
    /// fails when it is read.
    private static func skipValue(_ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Bool {
        var depth = 0
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
                    position += bytes[position] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard position < bytes.count else { return false }
                position += 1
                if depth == 0 { return true }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                position += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return true }
                depth -= 1
                position += 1
                if depth == 0 { return true }
            case UInt8(ascii: ","), 0x20, 0x0A, 0x0D, 0x09:
                if depth == 0 { return true }
                position += 1
            default:
                position += 1
            }
        }
        return depth == 0
    }

    /// Parses one member's value (`bytes` being its range), as it parses inside the whole object:
    /// strictly, and nested at most ``JSONScanner/maxNesting`` levels counting the object.
    package static func parseValue(_ bytes: UnsafeBufferPointer<UInt8>) throws(TreeError) -> JSONValue {
        var scanner = JSONScanner(bytes, isValidUTF8: false)
        scanner.depth = 1
        let value = try scanner.value()
        guard scanner.position == bytes.count else { throw scanner.error("unexpected text after the value") }
        return value
    }
}
