import Tree

/// PROTOCOL.md "Ordering", written out independently of Tree's comparators, so that tests can
/// check the library's sorted structures against a naive recomputation.
enum ReferenceOrder {
    /// A child's indexed value, by kind.
    enum Value: Equatable, CustomStringConvertible {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case object

        init(_ node: Node) {
            if node.isEmpty {
                self = .null
            } else if let leaf = node.leafValue {
                switch leaf {
                case .bool(let value): self = .bool(value)
                case .number(let value): self = .number(value)
                case .string(let value): self = .string(value)
                }
            } else {
                self = .object
            }
        }

        var rank: Int {
            switch self {
            case .null: 0
            case .bool: 1
            case .number: 2
            case .string: 3
            case .object: 4
            }
        }

        var description: String {
            switch self {
            case .null: "null"
            case .bool(let value): "\(value)"
            case .number(let value): "\(value)"
            case .string(let value): "\"\(value)\""
            case .object: "{…}"
            }
        }
    }

    /// null < false < true < numbers < strings < objects.
    static func compare(_ a: Value, _ b: Value) -> Int {
        if a.rank != b.rank { return a.rank < b.rank ? -1 : 1 }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (x ? 1 : -1)
        case (.number(let x), .number(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)):
            return x == y ? 0 : (Array(x.utf8).lexicographicallyPrecedes(y.utf8) ? -1 : 1)
        default: return 0
        }
    }

    /// Keys that are 32-bit integers first, numerically (shorter spelling first), then the rest as strings.
    static func compareKeys(_ a: String, _ b: String) -> Int {
        switch (Int32(a), Int32(b)) {
        case (let x?, let y?):
            if x != y { return x < y ? -1 : 1 }
            return a.utf8.count == b.utf8.count ? 0 : (a.utf8.count < b.utf8.count ? -1 : 1)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return a == b ? 0 : (Array(a.utf8).lexicographicallyPrecedes(b.utf8) ? -1 : 1)
        }
    }

    /// Children ordered by the value at `path` below each, ties by key.
    static func sortedKeys(of node: Node, byChild path: Path) -> [String] {
        node.children.map { ($0.key.string, Value($0.value.child(at: path))) }
            .sorted { a, b in
                let order = compare(a.1, b.1)
                return order != 0 ? order < 0 : compareKeys(a.0, b.0) < 0
            }
            .map(\.0)
    }
}
