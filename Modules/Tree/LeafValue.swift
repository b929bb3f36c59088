/// The value of a leaf node: a boolean, a number (stored as a double) or a string.
public enum LeafValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case number(Double)
    case string(String)

    /// Rank of the value's type in value order: booleans, then numbers, then strings.
    @usableFromInline var typeRank: Int {
        switch self {
        case .bool: 0
        case .number: 1
        case .string: 2
        }
    }

    /// Three-way comparison in value order (false < true < numbers < strings).
    public static func compare(_ a: LeafValue, _ b: LeafValue) -> Int {
        switch (a, b) {
        case (.bool(let x), .bool(let y)): x == y ? 0 : (!x ? -1 : 1)
        case (.number(let x), .number(let y)): x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): compareStrings(x, y)
        default: a.typeRank < b.typeRank ? -1 : 1
        }
    }

    public var description: String {
        switch self {
        case .bool(let value): String(value)
        case .number(let value): JSONValue.format(number: value)
        case .string(let value): value
        }
    }
}

/// A node's priority: a number or a string. Absent priorities sort first, then numbers, then strings.
public enum Priority: Sendable, Hashable, CustomStringConvertible {
    case number(Double)
    case string(String)

    public var leafValue: LeafValue {
        switch self {
        case .number(let value): .number(value)
        case .string(let value): .string(value)
        }
    }

    /// Three-way comparison where `nil` (no priority) sorts first.
    public static func compare(_ a: Priority?, _ b: Priority?) -> Int {
        switch (a, b) {
        case (nil, nil): 0
        case (nil, _): -1
        case (_, nil): 1
        case (let x?, let y?): LeafValue.compare(x.leafValue, y.leafValue)
        }
    }

    public var description: String { leafValue.description }
}
