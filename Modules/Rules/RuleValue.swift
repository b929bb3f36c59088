import Tree

/// A value while a rule is evaluated.
enum RuleValue: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    /// An object: `auth` or one of its members, or `val()` of a node with children.
    case object(Node)
    /// A snapshot as a value (rare: `root`, `data`, `newData` and their `child()` and `parent()`
    /// are made directly where a method is called on them), boxed to keep the other cases small.
    indirect case snapshot(RuleSnapshot)

    /// The value `node` holds: its leaf, `null` when empty, an object when it has children.
    init(_ node: Node) {
        if node.isEmpty {
            self = .null
        } else if let leaf = node.leafValue {
            self = RuleValue(leaf)
        } else {
            self = .object(node)
        }
    }

    init(_ leaf: LeafValue) {
        switch leaf {
        case .bool(let value): self = .bool(value)
        case .number(let value): self = .number(value)
        case .string(let value): self = .string(value)
        }
    }

    /// The kind of value, for messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .object: "object"
        case .snapshot: "RuleDataSnapshot"
        }
    }

    /// `value` as JavaScript writes it when joined to a string: `1`, `0.5`, `NaN`, `1e+21`.
    static func format(number value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == 0 { return "0" }
        if value.rounded() == value, abs(value) < 1e21 { return String(Int64(value)) }
        let text = "\(value)"
        guard let marker = text.firstIndex(of: "e") else { return text }
        let mantissa = text[..<marker]
        guard let exponent = Int(text[text.index(after: marker)...]) else { return text }
        if exponent < 0, exponent >= -6 {
            // JavaScript writes 1.5e-5 as 0.000015 (Swift as 1.5e-05).
            let negative = mantissa.hasPrefix("-")
            let digits = mantissa.filter { $0 != "-" && $0 != "." }
            return (negative ? "-" : "") + "0." + String(repeating: "0", count: -exponent - 1) + digits
        }
        return mantissa + (exponent < 0 ? "e-" : "e+") + String(abs(exponent))
    }
}
