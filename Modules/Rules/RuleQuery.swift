public import Tree

/// The query of a read, as `.read` rules see it through the `query` variable.
///
/// A plain read has no query (pass `nil`): then `query.orderByKey`, `orderByValue` and
/// `orderByPriority` are `false` and every other member is `null`.
///
/// ```swift
/// // ?orderBy="owner"&equalTo="ada"&limitToFirst=10
/// let query = RuleQuery(orderBy: .child("owner"), equalTo: RuleQuery.Bound(Node(.string("ada"))), limitToFirst: 10)
/// ```
public struct RuleQuery: Sendable, Equatable {
    /// One end of a range: a value (a leaf or `null`) and, optionally, the key that breaks ties.
    public struct Bound: Sendable, Equatable {
        public var value: Node
        public var key: ChildKey?

        public init(_ value: Node, key: ChildKey? = nil) {
            self.value = value
            self.key = key
        }
    }

    /// The ordering asked for (`orderByChild`, `orderByKey`, …), `nil` when none was.
    public var orderBy: Index?
    public var startAt: Bound?
    public var endAt: Bound?
    public var equalTo: Bound?
    public var limitToFirst: Int?
    public var limitToLast: Int?

    public init(
        orderBy: Index? = nil, startAt: Bound? = nil, endAt: Bound? = nil, equalTo: Bound? = nil,
        limitToFirst: Int? = nil, limitToLast: Int? = nil
    ) {
        self.orderBy = orderBy
        self.startAt = startAt
        self.endAt = endAt
        self.equalTo = equalTo
        self.limitToFirst = limitToFirst
        self.limitToLast = limitToLast
    }
}
