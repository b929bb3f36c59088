public import Query
public import Tree

/// A query at a location: what a listener observes.
public struct QuerySpec: Sendable, Hashable, CustomStringConvertible {
    public var path: Path
    public var params: QueryParams

    public init(path: Path, params: QueryParams = .default) {
        self.path = path
        self.params = params
    }

    /// Names the view that serves this query within its location. Queries that load all data
    /// share the server data but keep a view per ordering (their events differ in `prevName`).
    public var viewID: String {
        if params.isDefault { return "default" }
        if params.loadsAllData { return "all:" + params.index.wireName }
        return params.description
    }

    /// The query to ask the server for: an ordering without range or limit listens to everything.
    public var listenQuery: QuerySpec {
        params.loadsAllData && !params.isDefault ? QuerySpec(path: path, params: .default) : self
    }

    public var description: String { "\(path) \(params)" }
}

/// A listener's interest in a query's events.
public struct EventRegistration: Sendable, Hashable {
    /// Identifies the listener (unique per sync tree).
    public let id: Int
    /// The event types it wants.
    public let types: Set<EventType>

    public init(id: Int, types: Set<EventType>) {
        self.id = id
        self.types = types
    }

    public func responds(to type: EventType) -> Bool { types.contains(type) }
}

/// Something a listener is told.
public enum Event: Sendable, CustomStringConvertible {
    /// Data changed: `change.node` is the data at `path` (the query location for `value`, the child
    /// for `child_*` events).
    case data(registration: EventRegistration, path: Path, change: Change)
    /// The listen was refused (for example permission denied); the listener is removed.
    case cancel(registration: EventRegistration, path: Path, error: String)

    public var registration: EventRegistration {
        switch self {
        case .data(let registration, _, _), .cancel(let registration, _, _): registration
        }
    }

    public var description: String {
        switch self {
        case .data(let registration, let path, let change): "#\(registration.id) \(path) \(change)"
        case .cancel(let registration, let path, let error): "#\(registration.id) \(path) cancelled: \(error)"
        }
    }
}
