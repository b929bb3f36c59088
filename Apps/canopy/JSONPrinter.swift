import Tree

/// JSON text for people (indented by two spaces, coloured with ANSI escapes) or for programs
/// (compact, one line). Object members come in key order (Firebase's: integer keys first,
/// numerically), unless an explicit order is given for the top level.
struct JSONPrinter {
    var pretty: Bool
    var colour: Bool

    private enum Style: String {
        case key = "\u{1B}[1;34m"
        case string = "\u{1B}[32m"
        case number = "\u{1B}[36m"
        case literal = "\u{1B}[33m"
        case null = "\u{1B}[90m"
    }

    private static let reset = "\u{1B}[0m"

    /// `value` as text; `order` lists the top-level keys in the order to print them (a query's
    /// order), members it leaves out follow in key order.
    func text(_ value: JSONValue, order: [String]? = nil) -> String {
        var output = ""
        write(value, to: &output, indent: 0, order: order)
        return output
    }

    private func write(_ value: JSONValue, to output: inout String, indent: Int, order: [String]? = nil) {
        switch value {
        case .null: styled("null", .null, &output)
        case .bool(let flag): styled(flag ? "true" : "false", .literal, &output)
        case .number(let number): styled(JSONValue.format(number: number), .number, &output)
        case .string(let string): styled(Self.quoted(string), .string, &output)
        case .array(let elements):
            guard !elements.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output += "," }
                newline(&output, indent + 1)
                write(element, to: &output, indent: indent + 1)
            }
            newline(&output, indent)
            output += "]"
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            for (offset, key) in Self.keys(of: members, order: order).enumerated() {
                if offset > 0 { output += "," }
                newline(&output, indent + 1)
                styled(Self.quoted(key), .key, &output)
                output += pretty ? ": " : ":"
                write(members[key] ?? .null, to: &output, indent: indent + 1)
            }
            newline(&output, indent)
            output += "}"
        }
    }

    /// The members' keys: first those of `order` (that exist), then the rest in key order.
    static func keys(of members: [String: JSONValue], order: [String]?) -> [String] {
        let sorted = members.keys.map { ChildKey($0) }.sorted().map(\.string)
        guard let order else { return sorted }
        let listed = Set(order)
        return order.filter { members[$0] != nil } + sorted.filter { !listed.contains($0) }
    }

    private func styled(_ text: String, _ style: Style, _ output: inout String) {
        if colour {
            output += style.rawValue + text + Self.reset
        } else {
            output += text
        }
    }

    private func newline(_ output: inout String, _ indent: Int) {
        guard pretty else { return }
        output += "\n" + String(repeating: "  ", count: indent)
    }

    /// `string` as a JSON string literal.
    static func quoted(_ string: String) -> String {
        var output = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output + "\""
    }
}
