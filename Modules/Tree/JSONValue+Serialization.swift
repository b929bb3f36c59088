#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            if let count = array.count { elements.reserveCapacity(count) }
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(object.allKeys.count)
            for key in object.allKeys { members[key.stringValue] = try object.decode(JSONValue.self, forKey: key) }
            self = .object(members)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let value):
            var single = encoder.singleValueContainer()
            if value.rounded() == value, abs(value) < 9_007_199_254_740_992 {
                try single.encode(Int64(value))
            } else {
                try single.encode(value)
            }
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let members):
            var object = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in members { try object.encode(value, forKey: AnyKey(stringValue: key)) }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSONValue {
    /// Parses JSON text; throws ``TreeError/invalidJSON(reason:)`` (with the byte offset) when it
    /// is not JSON.
    public init(parsing text: String) throws(TreeError) {
        var text = text
        let result = text.withUTF8 { bytes in
            Result { () throws(TreeError) in try JSONScanner.parse(bytes, isValidUTF8: true) }
        }
        self = try result.get()
    }

    /// Parses UTF-8 JSON bytes; throws ``TreeError/invalidJSON(reason:)`` when they are not JSON.
    public init(parsing data: Data) throws(TreeError) {
        let result = data.withUnsafeBytes { raw in
            Result { () throws(TreeError) in try JSONScanner.parse(raw.bindMemory(to: UInt8.self)) }
        }
        self = try result.get()
    }

    /// Parses UTF-8 JSON bytes in place (a request body's buffer): ``init(parsing:)-(Data)``
    /// without copying them first.
    package init(parsing bytes: UnsafeBufferPointer<UInt8>) throws(TreeError) {
        self = try JSONScanner.parse(bytes)
    }

    /// Compact JSON text (object members sorted by key, so equal values serialize equally).
    /// With `pretty`, members and elements go on their own lines, indented by two spaces.
    public func serialized(pretty: Bool = false) -> String {
        var output = ""
        write(to: &output, pretty: pretty, indent: 0)
        return output
    }

    func write(to output: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let value): output += Self.format(number: value)
        case .string(let value): Self.writeString(value, to: &output)
        case .array(let elements):
            if elements.isEmpty {
                output += "[]"
                return
            }
            output += "["
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output += "," }
                if pretty { Self.newline(&output, indent + 1) }
                element.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&output, indent) }
            output += "]"
        case .object(let members):
            if members.isEmpty {
                output += "{}"
                return
            }
            output += "{"
            let sorted = members.map { (key: ChildKey($0.key), value: $0.value) }.sorted { $0.key < $1.key }
            for (offset, member) in sorted.enumerated() {
                if offset > 0 { output += "," }
                if pretty { Self.newline(&output, indent + 1) }
                Self.writeString(member.key.string, to: &output)
                output += pretty ? ": " : ":"
                member.value.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&output, indent) }
            output += "}"
        }
    }

    private static func newline(_ output: inout String, _ indent: Int) {
        output += "\n"
        output += String(repeating: "  ", count: indent)
    }

    /// JSON spelling of a number: integral values without a fraction (`3`, not `3.0`).
    public static func format(number value: Double) -> String {
        if !value.isFinite { return "null" }
        if value.rounded() == value, abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Whether `string` holds a character JSON escapes: a control character, a quote or a backslash. One
    /// loop over the bytes (the generic `contains(where:)` cost a fifth of writing a record).
    private static func needsEscaping(_ string: String) -> Bool {
        let found = string.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                return true
            }
            return false
        }
        return found ?? string.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }

    static func writeString(_ string: String, to output: inout String) {
        if !needsEscaping(string) {
            output += "\""
            output += string
            output += "\""
            return
        }
        output += "\""
        var pendingStart = string.unicodeScalars.startIndex
        let scalars = string.unicodeScalars
        var index = scalars.startIndex
        while index != scalars.endIndex {
            let scalar = scalars[index]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            case "\u{08}": escape = "\\b"
            case "\u{0C}": escape = "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    escape = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    escape = nil
                }
            }
            if let escape {
                output.append(contentsOf: string[pendingStart..<index])
                output += escape
                pendingStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        output.append(contentsOf: string[pendingStart...])
        output += "\""
    }
}
