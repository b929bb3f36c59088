import ArgumentParser
import Canopy
import Query
import Tree

/// The query flags of `get` and `listen`: one ordering, a range and a limit, as Firebase's
/// `orderByChild(…).startAt(…).limitToFirst(…)`. Bounds are JSON values (`5`, `true`, `'"ada"'`).
struct QueryOptions: ParsableArguments {
    @Option(name: .customLong("order-by-child"), help: "Order by the value of this child path (height, a/b).")
    var orderByChild: String?

    @Flag(help: "Order by key.")
    var orderByKey = false

    @Flag(help: "Order by value.")
    var orderByValue = false

    @Flag(help: "Order by priority.")
    var orderByPriority = false

    @Option(help: "Children from this JSON value on (a string in quotes: '\"ada\"').")
    var startAt: String?

    @Option(help: "Children after this JSON value.")
    var startAfter: String?

    @Option(help: "Children up to this JSON value.")
    var endAt: String?

    @Option(help: "Children before this JSON value.")
    var endBefore: String?

    @Option(help: "Children equal to this JSON value.")
    var equalTo: String?

    @Option(help: "The first N children in the order.")
    var limitToFirst: Int?

    @Option(help: "The last N children in the order.")
    var limitToLast: Int?

    private var bounds: [(flag: String, parameter: String, text: String?)] {
        [
            ("--start-at", "startAt", startAt), ("--start-after", "startAfter", startAfter),
            ("--end-at", "endAt", endAt), ("--end-before", "endBefore", endBefore),
            ("--equal-to", "equalTo", equalTo),
        ]
    }

    /// The ordering's REST name (`"$key"`, `"height"`, JSON-encoded), if one was given.
    private var orderBy: String? {
        if let orderByChild { return JSONPrinter.quoted(orderByChild) }
        if orderByKey { return #""$key""# }
        if orderByValue { return #""$value""# }
        if orderByPriority { return #""$priority""# }
        return nil
    }

    /// The ordering, for printing results in query order.
    var index: Index? {
        if let orderByChild { return .child(Path(orderByChild)) }
        if orderByKey { return .key }
        if orderByValue { return .value }
        if orderByPriority { return .priority }
        return nil
    }

    /// The query-string parameters, values JSON-encoded (`orderBy="$key"`, `startAt=5`).
    var restParameters: [(String, String)] {
        var parameters: [(String, String)] = []
        if let orderBy { parameters.append(("orderBy", orderBy)) }
        for bound in bounds { if let text = bound.text { parameters.append((bound.parameter, text)) } }
        if let limitToFirst { parameters.append(("limitToFirst", String(limitToFirst))) }
        if let limitToLast { parameters.append(("limitToLast", String(limitToLast))) }
        return parameters
    }

    func validate() throws {
        let orderings = [orderByChild != nil, orderByKey, orderByValue, orderByPriority].filter { $0 }.count
        guard orderings <= 1 else {
            throw ValidationError(
                "give at most one of --order-by-child, --order-by-key, --order-by-value, --order-by-priority")
        }
        if let orderByChild {
            do {
                guard !(try Path(validating: orderByChild)).isEmpty else {
                    throw ValidationError("--order-by-child needs a child path, such as height or address/city")
                }
            } catch let error as TreeError {
                throw ValidationError("--order-by-child \(orderByChild): \(error)")
            }
        }
        for bound in bounds {
            guard let text = bound.text else { continue }
            _ = try Self.boundValue(bound.flag, text)
        }
        for (flag, limit) in [("--limit-to-first", limitToFirst), ("--limit-to-last", limitToLast)] {
            if let limit, limit <= 0 { throw ValidationError("\(flag) must be a positive integer, not \(limit)") }
        }
        let hasRangeOrLimit = bounds.contains { $0.text != nil } || limitToFirst != nil || limitToLast != nil
        if hasRangeOrLimit, orderBy == nil {
            throw ValidationError(
                "a range or limit needs an ordering: add --order-by-child KEY, --order-by-key, --order-by-value "
                    + "or --order-by-priority")
        }
        do {
            _ = try QueryParams(restParameters: Dictionary(restParameters) { first, _ in first })
        } catch {
            throw ValidationError("invalid query: \(error)")
        }
    }

    /// A bound's JSON value; it must be null, a boolean, a number or a string.
    static func boundValue(_ flag: String, _ text: String) throws(ValidationError) -> JSONValue {
        guard let value = try? JSONValue(parsing: text) else {
            throw ValidationError(
                "\(flag) \(text) is not JSON; quote a string as JSON: \(flag) '\(JSONPrinter.quoted(text))'")
        }
        switch value {
        case .null, .bool, .number, .string: return value
        case .array, .object: throw ValidationError("\(flag) must be null, a boolean, a number or a string")
        }
    }

    /// `query` with these flags applied (for listeners through the SDK).
    func apply(to query: DatabaseQuery) -> DatabaseQuery {
        var query = query
        if let orderByChild { query = query.queryOrdered(byChild: orderByChild) }
        if orderByKey { query = query.queryOrderedByKey() }
        if orderByValue { query = query.queryOrderedByValue() }
        if orderByPriority { query = query.queryOrderedByPriority() }
        func value(_ text: String?) -> Any?? {
            guard let text, let json = try? JSONValue(parsing: text) else { return nil }
            switch json {
            case .string(let string): return .some(string)
            case .number(let number): return .some(number)
            case .bool(let flag): return .some(flag)
            default: return .some(nil)
            }
        }
        if let bound = value(startAt) { query = query.queryStarting(atValue: bound) }
        if let bound = value(startAfter) { query = query.queryStarting(afterValue: bound) }
        if let bound = value(endAt) { query = query.queryEnding(atValue: bound) }
        if let bound = value(endBefore) { query = query.queryEnding(beforeValue: bound) }
        if let bound = value(equalTo) { query = query.queryEqual(toValue: bound) }
        if let limitToFirst { query = query.queryLimited(toFirst: UInt(limitToFirst)) }
        if let limitToLast { query = query.queryLimited(toLast: UInt(limitToLast)) }
        return query
    }
}
