public import Tree

/// The query object of the realtime protocol (the `q` of listen, unlisten and get requests).
///
/// ```swift
/// // orderByChild("height").startAt(3).limitToLast(2)
/// params.wireObject   // {"i": "height", "l": 2, "sin": true, "sp": 3, "vf": "r"}
/// ```
extension QueryParams {
    private enum WireKey {
        static let startValue = "sp"
        static let startName = "sn"
        static let startInclusive = "sin"
        static let endValue = "ep"
        static let endName = "en"
        static let endInclusive = "ein"
        static let limit = "l"
        static let viewFrom = "vf"
        static let index = "i"
        static let all: Set<String> = [
            startValue, startName, startInclusive, endValue, endName, endInclusive, limit, viewFrom, index,
        ]
    }

    /// The query object the official clients send, or `nil` for a query that loads all data: those
    /// are listened to plainly (no `q`), whatever their ordering, since the ordering only affects
    /// events on the client.
    public var wireObject: JSONValue? {
        // Not a ternary: `nil` there would become `JSONValue.null`.
        if loadsAllData { return nil }
        return queryObject
    }

    /// A canonical key for the query: `"default"` for the plain query, otherwise its query object
    /// (including the ordering) serialized with sorted keys. Params that select the same children
    /// in the same order share an identifier, even when their bounds are spelled differently (a start
    /// named ``ChildKey/min`` or not named; a start named ``ChildKey/max`` sent with or without
    /// `sin: false`); different orderings get different identifiers, as they raise different events.
    public var queryIdentifier: String {
        isDefault ? "default" : canonicalized.queryObject.serialized()
    }

    /// Reads a query object as the official clients send it; `nil` (or `null`, or `{}`) is the
    /// plain query. `sin`/`ein` default to `true` and `vf` to the side of the start bound, as older
    /// clients omit them.
    ///
    /// - Throws: ``QueryError/invalidWireObject(_:)`` for anything but an object of the keys
    ///   `sp` `sn` `sin` `ep` `en` `ein` `l` `vf` `i` with the right types (bound values are JSON
    ///   primitives, names strings, flags booleans, `vf` `"l"` or `"r"`, `l` an integer, `sn`/`sin`
    ///   only beside `sp`, `en`/`ein` only beside `ep`, `vf` only beside `l`);
    ///   ``QueryError/invalidLimit(_:)`` for a limit below 1; ``QueryError/invalidIndex(_:reason:)``
    ///   and ``QueryError/invalidBound(index:value:reason:)`` as the builder checks them.
    public init(wireObject: JSONValue?) throws(QueryError) {
        guard let wireObject, wireObject != .null else {
            self.init()
            return
        }
        guard case .object(let members) = wireObject else {
            throw .invalidWireObject("expected an object, got \(wireObject.serialized())")
        }
        if let unknown = members.keys.sorted().first(where: { !WireKey.all.contains($0) }) {
            throw .invalidWireObject("unknown key \"\(unknown)\"")
        }
        var params = QueryParams()
        if let index = members[WireKey.index] {
            guard case .string(let name) = index else {
                throw .invalidWireObject("\(WireKey.index) must be a string, got \(index.serialized())")
            }
            params.index = Index(wireName: name)
            try Self.check(params.index)
        }
        params.start = try Self.wireBound(
            members, value: WireKey.startValue, name: WireKey.startName, inclusive: WireKey.startInclusive)
        params.end = try Self.wireBound(
            members, value: WireKey.endValue, name: WireKey.endName, inclusive: WireKey.endInclusive)
        params.limit = try Self.wireLimit(members, fromLeft: params.start != nil)
        try params.checkBounds()
        self = params
    }

    /// Every part of the query, the ordering included; ``wireObject`` leaves out queries that load
    /// all data.
    var queryObject: JSONValue {
        var object: [String: JSONValue] = [:]
        if let start {
            object[WireKey.startValue] = start.value.json()
            if let name = start.name { object[WireKey.startName] = .string(name.string) }
            object[WireKey.startInclusive] = .bool(start.inclusive)
        }
        if let end {
            object[WireKey.endValue] = end.value.json()
            if let name = end.name { object[WireKey.endName] = .string(name.string) }
            object[WireKey.endInclusive] = .bool(end.inclusive)
        }
        switch limit {
        case .first(let count):
            object[WireKey.limit] = .number(Double(count))
            object[WireKey.viewFrom] = "l"
        case .last(let count):
            object[WireKey.limit] = .number(Double(count))
            object[WireKey.viewFrom] = "r"
        case nil:
            break
        }
        if index != .priority { object[WireKey.index] = .string(index.wireName) }
        return .object(object)
    }

    /// The same selection with each bound in one spelling. Off the key index a bound compares as the
    /// position (value, name), the name defaulting to the sentinel on the open side; no child sits at
    /// a sentinel, so there the inclusive flag does not matter. On the key index the value is the
    /// position and the name is unused.
    var canonicalized: QueryParams {
        var params = self
        if let start { params.start = canonical(start, open: .min, closed: .max) }
        if let end { params.end = canonical(end, open: .max, closed: .min) }
        return params
    }

    /// `open` is the sentinel an absent name stands for, `closed` the one that excludes every key.
    private func canonical(_ bound: Bound, open: ChildKey, closed: ChildKey) -> Bound {
        if index == .key, case .string? = bound.value.leafValue {
            return Bound(value: bound.value, name: nil, inclusive: bound.inclusive)
        }
        switch bound.name {
        case nil, open?: return Bound(value: bound.value, name: nil, inclusive: true)
        case closed?: return Bound(value: bound.value, name: closed, inclusive: false)
        default: return bound
        }
    }

    /// The leaf (or empty node) a JSON primitive denotes; `nil` for arrays, objects and non-finite numbers.
    static func boundValue(_ json: JSONValue) -> Node? {
        switch json {
        case .null: .empty
        case .bool(let value): Node(.bool(value))
        case .number(let value) where value.isFinite: Node(.number(value))
        case .string(let value): Node(.string(value))
        case .number, .array, .object: nil
        }
    }

    private static func wireBound(
        _ members: [String: JSONValue], value valueKey: String, name nameKey: String, inclusive inclusiveKey: String
    ) throws(QueryError) -> Bound? {
        guard let json = members[valueKey] else {
            if let orphan = [nameKey, inclusiveKey].first(where: { members[$0] != nil }) {
                throw .invalidWireObject("\(orphan) given without \(valueKey)")
            }
            return nil
        }
        guard let value = boundValue(json) else {
            throw .invalidWireObject(
                "\(valueKey) must be null, a boolean, a number or a string, got \(json.serialized())")
        }
        var name: ChildKey?
        if let json = members[nameKey] {
            guard case .string(let string) = json else {
                throw .invalidWireObject("\(nameKey) must be a string, got \(json.serialized())")
            }
            name = ChildKey(string)
        }
        var inclusive = true
        if let json = members[inclusiveKey] {
            guard case .bool(let flag) = json else {
                throw .invalidWireObject("\(inclusiveKey) must be a boolean, got \(json.serialized())")
            }
            inclusive = flag
        }
        return Bound(value: value, name: name, inclusive: inclusive)
    }

    private static func wireLimit(_ members: [String: JSONValue], fromLeft: Bool) throws(QueryError) -> Limit? {
        guard let json = members[WireKey.limit] else {
            if members[WireKey.viewFrom] != nil {
                throw .invalidWireObject("\(WireKey.viewFrom) given without \(WireKey.limit)")
            }
            return nil
        }
        guard case .number(let number) = json, let count = Int(exactly: number) else {
            throw .invalidWireObject("\(WireKey.limit) must be a positive integer, got \(json.serialized())")
        }
        guard count > 0 else { throw .invalidLimit(count) }
        switch members[WireKey.viewFrom] {
        case .string("l")?: return .first(count)
        case .string("r")?: return .last(count)
        case nil: return fromLeft ? .first(count) : .last(count)
        case let other?:
            throw .invalidWireObject("\(WireKey.viewFrom) must be \"l\" or \"r\", got \(other.serialized())")
        }
    }
}
