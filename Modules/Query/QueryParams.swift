public import Tree

/// What a query selects from a location's children: an ordering (``Index``), an optional range
/// and an optional limit.
///
/// ```swift
/// // orderByChild("height").startAt(3).limitToLast(2)
/// let params = try QueryParams(index: .child("height"))
///     .starting(at: Node(.number(3)))
///     .limited(toLast: 2)
/// ```
public struct QueryParams: Sendable, Hashable, CustomStringConvertible {
    /// One end of a range: children whose indexed value (then key) lies beyond `value` (and `name`).
    public struct Bound: Sendable, Hashable {
        /// The indexed value at the bound (for the key index, a string leaf naming the key).
        public var value: Node
        /// The key that breaks ties at `value`; `nil` means "any key" (the open end).
        public var name: ChildKey?
        /// `false` for `startAfter` / `endBefore`.
        public var inclusive: Bool

        public init(value: Node, name: ChildKey? = nil, inclusive: Bool = true) {
            self.value = value
            self.name = name
            self.inclusive = inclusive
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(value.hash)
            hasher.combine(name)
            hasher.combine(inclusive)
        }
    }

    /// How many children a limited query keeps, and from which end.
    public enum Limit: Sendable, Hashable {
        case first(Int)
        case last(Int)

        public var count: Int {
            switch self {
            case .first(let count), .last(let count): count
            }
        }
    }

    public var index: Index
    public var start: Bound?
    public var end: Bound?
    public var limit: Limit?

    public init(index: Index = .priority, start: Bound? = nil, end: Bound? = nil, limit: Limit? = nil) {
        self.index = index
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// Every child in priority order: what a plain listener asks for.
    public static let `default` = QueryParams()

    /// Whether the query selects every child (no range, no limit); its ordering only affects events.
    public var loadsAllData: Bool { start == nil && end == nil && limit == nil }
    /// Whether this is the plain, unordered query.
    public var isDefault: Bool { loadsAllData && index == .priority }
    /// Whether a limited window is kept from the start (`limitToFirst`, or a start bound without limit).
    public var isViewFromLeft: Bool {
        switch limit {
        case .first: true
        case .last: false
        case nil: start != nil
        }
    }

    /// The smallest child the range admits.
    public var startPost: NamedNode {
        guard let start else { return index.minPost }
        return index.makePost(start.value, name: start.name ?? .min)
    }

    /// The largest child the range admits.
    public var endPost: NamedNode {
        guard let end else { return index.maxPost }
        return index.makePost(end.value, name: end.name ?? .max)
    }

    public var description: String {
        var parts = ["orderBy \(index)"]
        if let start {
            parts.append(
                "\(start.inclusive ? "startAt" : "startAfter") \(start.value)\(start.name.map { ", \($0)" } ?? "")")
        }
        if let end {
            parts.append("\(end.inclusive ? "endAt" : "endBefore") \(end.value)\(end.name.map { ", \($0)" } ?? "")")
        }
        switch limit {
        case .first(let count): parts.append("limitToFirst \(count)")
        case .last(let count): parts.append("limitToLast \(count)")
        case nil: break
        }
        return parts.joined(separator: " ")
    }

    public static func == (lhs: QueryParams, rhs: QueryParams) -> Bool {
        lhs.index == rhs.index && lhs.start == rhs.start && lhs.end == rhs.end && lhs.limit == rhs.limit
    }
}
