import Tree

/// The query parameters of REST reads, such as
/// `GET /dinosaurs.json?orderBy="height"&startAt=3&limitToLast=2`.
///
/// Every value is JSON-encoded. A bound may carry a key name after a comma (`startAt=3,"stegosaurus"`),
/// as the official JavaScript SDK's REST client sends one; `startAfter` and `endBefore` without a name
/// exclude every child at their value, except when ordering by key.
///
/// ```swift
/// let params = try QueryParams(restParameters: ["orderBy": "\"height\"", "startAt": "3", "limitToLast": "2"])
/// params.restParameters   // the same three parameters
/// ```
extension QueryParams {
    private enum RestName {
        static let orderBy = "orderBy"
        static let startAt = "startAt"
        static let startAfter = "startAfter"
        static let endAt = "endAt"
        static let endBefore = "endBefore"
        static let equalTo = "equalTo"
        static let limitToFirst = "limitToFirst"
        static let limitToLast = "limitToLast"
        static let rangeAndLimit = [startAt, startAfter, endAt, endBefore, equalTo, limitToFirst, limitToLast]
    }

    /// Reads the query from percent-decoded query-string values; parameters that are not part of a
    /// query (`print`, `shallow`, `format`, `auth`, `ns`, …) are ignored.
    ///
    /// - Throws: ``QueryError/orderByRequired`` for a range or limit without `orderBy`;
    ///   ``QueryError/invalidParameter(name:value:reason:)`` for a value that is not the JSON the
    ///   parameter takes (a non-string `orderBy`, a bound that is not a primitive, a limit that is not a
    ///   positive integer); otherwise the builder's errors for impossible combinations.
    public init(restParameters: [String: String]) throws(QueryError) {
        guard let orderBy = restParameters[RestName.orderBy] else {
            if RestName.rangeAndLimit.contains(where: { restParameters[$0] != nil }) { throw .orderByRequired }
            self.init()
            return
        }
        var params = try QueryParams().ordered(by: Self.restIndex(orderBy))
        if let text = restParameters[RestName.startAt] {
            let (value, name) = try Self.restBound(RestName.startAt, text)
            params = try params.settingStart(Bound(value: value, name: name), method: RestName.startAt)
        }
        if let text = restParameters[RestName.startAfter] {
            let (value, name) = try Self.restBound(RestName.startAfter, text)
            let bound = Bound(value: value, name: params.exclusiveName(name, beyond: .max), inclusive: false)
            params = try params.settingStart(bound, method: RestName.startAfter)
        }
        if let text = restParameters[RestName.endAt] {
            let (value, name) = try Self.restBound(RestName.endAt, text)
            params = try params.settingEnd(Bound(value: value, name: name), method: RestName.endAt)
        }
        if let text = restParameters[RestName.endBefore] {
            let (value, name) = try Self.restBound(RestName.endBefore, text)
            let bound = Bound(value: value, name: params.exclusiveName(name, beyond: .min), inclusive: false)
            params = try params.settingEnd(bound, method: RestName.endBefore)
        }
        if let text = restParameters[RestName.equalTo] {
            let (value, name) = try Self.restBound(RestName.equalTo, text)
            params = try params.settingEquality(Bound(value: value, name: name))
        }
        if let text = restParameters[RestName.limitToFirst] {
            params = try params.limited(toFirst: Self.restLimit(RestName.limitToFirst, text))
        }
        if let text = restParameters[RestName.limitToLast] {
            params = try params.limited(toLast: Self.restLimit(RestName.limitToLast, text))
        }
        self = params
    }

    /// The query as REST parameters (not yet percent-encoded); empty for the plain query. Reading them
    /// back gives params with the same ``queryIdentifier`` (and equal params for any the builder makes).
    public var restParameters: [String: String] {
        if isDefault { return [:] }
        let params = canonicalized
        let orderBy: String
        switch index {
        case .priority: orderBy = "$priority"
        case .key: orderBy = "$key"
        case .value: orderBy = "$value"
        case .child(let path): orderBy = path.wireString
        }
        var result = [RestName.orderBy: JSONValue.string(orderBy).serialized()]
        if let start = params.start {
            let implied = start.inclusive ? nil : params.exclusiveName(nil, beyond: .max)
            result[start.inclusive ? RestName.startAt : RestName.startAfter] = Self.restText(start, implied: implied)
        }
        if let end = params.end {
            let implied = end.inclusive ? nil : params.exclusiveName(nil, beyond: .min)
            result[end.inclusive ? RestName.endAt : RestName.endBefore] = Self.restText(end, implied: implied)
        }
        switch limit {
        case .first(let count): result[RestName.limitToFirst] = String(count)
        case .last(let count): result[RestName.limitToLast] = String(count)
        case nil: break
        }
        return result
    }

    /// `value` or `value,"name"`, leaving out the name the parameter implies.
    private static func restText(_ bound: Bound, implied: ChildKey?) -> String {
        let value = bound.value.json().serialized()
        guard let name = bound.name, name != implied else { return value }
        return value + "," + JSONValue.string(name.string).serialized()
    }

    private static func restIndex(_ text: String) throws(QueryError) -> Index {
        guard case .string(let name)? = try? JSONValue(parsing: text) else {
            throw .invalidParameter(
                name: RestName.orderBy, value: text,
                reason: "must be a JSON string: \"$key\", \"$value\", \"$priority\" or a child path")
        }
        switch name {
        case "$key": return .key
        case "$value": return .value
        case "$priority": return .priority
        default: return .child(Path(name))
        }
    }

    /// A JSON primitive, optionally followed by a comma and a JSON string naming a key.
    private static func restBound(_ parameter: String, _ text: String) throws(QueryError) -> (Node, ChildKey?) {
        let json: JSONValue
        var name: ChildKey?
        if let value = try? JSONValue(parsing: text) {
            json = value
        } else if case .array(let parts)? = try? JSONValue(parsing: "[\(text)]"), parts.count == 2 {
            guard case .string(let key) = parts[1] else {
                throw .invalidParameter(
                    name: parameter, value: text, reason: "the key name after the comma must be a JSON string")
            }
            json = parts[0]
            name = ChildKey(key)
        } else {
            throw .invalidParameter(name: parameter, value: text, reason: "must be a JSON value")
        }
        guard let value = boundValue(json) else {
            throw .invalidParameter(
                name: parameter, value: text, reason: "must be null, a boolean, a number or a string")
        }
        return (value, name)
    }

    private static func restLimit(_ parameter: String, _ text: String) throws(QueryError) -> Int {
        guard case .number(let number)? = try? JSONValue(parsing: text), let count = Int(exactly: number), count > 0
        else {
            throw .invalidParameter(name: parameter, value: text, reason: "must be a positive integer")
        }
        return count
    }
}
