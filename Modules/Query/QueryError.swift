public import Tree

/// What was wrong with a query: an impossible combination asked of the builder, or a query object
/// or REST parameter that no official client would send.
///
/// The description is fit to show to whoever sent the query (a REST server answers it as the 400 body):
/// ```swift
/// try QueryParams().equal(to: Node(.number(3))).starting(at: Node(.number(1)))
/// // throws conflictingBounds("startAt cannot be combined with an earlier startAt, startAfter or equalTo")
/// ```
public enum QueryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Range calls that cannot be combined (`equalTo` with `startAt`, two starts, two ends).
    case conflictingBounds(String)
    /// A second `limitToFirst` / `limitToLast`.
    case limitAlreadySet
    /// A limit that is not a positive integer.
    case invalidLimit(Int)
    /// A bound (or its key name) that the index cannot order by: orderByKey with a non-string value
    /// or with a key name, orderByPriority with a boolean, any index with an object.
    case invalidBound(index: Index, value: JSONValue, reason: String)
    /// A second `orderBy`; a query has one ordering.
    case indexAlreadySet
    /// An ordering that cannot exist, such as a child path that is empty or holds an invalid key.
    case invalidIndex(String, reason: String)
    /// A wire query object (the `q` of a listen, unlisten or get) that is malformed.
    case invalidWireObject(String)
    /// A REST query parameter whose value cannot be read.
    case invalidParameter(name: String, value: String, reason: String)
    /// REST range or limit parameters without `orderBy`.
    case orderByRequired

    public var description: String {
        switch self {
        case .conflictingBounds(let message):
            message
        case .limitAlreadySet:
            "limit was already set (by limitToFirst or limitToLast)"
        case .invalidLimit(let limit):
            "limit must be a positive integer, got \(limit)"
        case .invalidBound(let index, let value, let reason):
            "\(value.serialized()) cannot bound a query ordered by \(Self.describe(index)): \(reason)"
        case .indexAlreadySet:
            "orderBy was already called; a query has one ordering"
        case .invalidIndex(let name, let reason):
            "invalid orderBy \"\(name)\": \(reason)"
        case .invalidWireObject(let reason):
            "invalid query object: \(reason)"
        case .invalidParameter(let name, let value, let reason):
            "invalid \(name)=\(value): \(reason)"
        case .orderByRequired:
            "orderBy must be defined when other query parameters are defined"
        }
    }

    private static func describe(_ index: Index) -> String {
        switch index {
        case .priority: "priority"
        case .key: "key"
        case .value: "value"
        case .child(let path): "child \"\(path.wireString)\""
        }
    }
}
