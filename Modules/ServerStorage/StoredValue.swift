import Persistence
import Tree

/// The JSON text of a leaf or priority, as the `value` column of the `nodes` table holds it:
/// `true`/`false`, numbers as ``JSONValue/format(number:)`` spells them, strings quoted and escaped.
enum StoredValue {
    static func text(of leaf: LeafValue) -> String {
        switch leaf {
        case .bool(let value): value ? "true" : "false"
        case .number(let value): JSONValue.format(number: value)
        case .string(let value): JSONValue.string(value).serialized()
        }
    }

    static func text(of priority: Priority) -> String { text(of: priority.leafValue) }

    /// Throws ``StoreError/invalidWrite(path:reason:)`` for a value with no JSON spelling (an
    /// infinite or NaN number), which would otherwise be stored as `null` and never read back.
    static func checkStorable(_ leaf: LeafValue, at rowPath: String) throws(StoreError) {
        if case .number(let value) = leaf, !value.isFinite {
            throw .invalidWrite(path: rowPath, reason: "\(value) is not a finite number")
        }
    }

    /// The leaf that `text` spells, or `nil` when it is not a JSON boolean, finite number or string.
    static func leaf(from text: String) -> LeafValue? {
        guard let first = text.utf8.first else { return nil }
        switch first {
        case UInt8(ascii: "\""):
            return decodeString(text).map { .string($0) }
        case UInt8(ascii: "t"):
            return text == "true" ? .bool(true) : nil
        case UInt8(ascii: "f"):
            return text == "false" ? .bool(false) : nil
        default:
            guard let number = Double(text), number.isFinite else { return nil }
            return .number(number)
        }
    }

    /// The priority that `text` spells (a number or string), or `nil`.
    static func priority(from text: String) -> Priority? {
        leaf(from: text).flatMap(Priority.init(leaf:))
    }

    /// Decodes a JSON string literal (quotes included). Strings without escapes, the common case,
    /// cost one copy.
    static func decodeString(_ text: String) -> String? {
        let utf8 = text.utf8
        guard utf8.count >= 2, utf8.last == UInt8(ascii: "\"") else { return nil }
        let body = utf8.dropFirst().dropLast()
        if !body.contains(UInt8(ascii: "\\")) { return String(Substring(body)) }
        return unescape(Array(body))
    }

    private static func unescape(_ bytes: [UInt8]) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                continue
            }
            guard index < bytes.count else { return nil }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escaped)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hex4(bytes, &index) else { return nil }
                if (0xD800..<0xDC00).contains(scalar) {
                    // A high surrogate must be followed by `\u` and a low surrogate.
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else { return nil }
                    index += 2
                    guard let low = hex4(bytes, &index), (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { return nil }
                output.append(contentsOf: String(Character(unicode)).utf8)
            default:
                return nil
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hex4(_ bytes: [UInt8], _ index: inout Int) -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        index += 4
        return value
    }
}
