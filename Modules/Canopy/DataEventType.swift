import Query

/// What a listener is told about (Firebase's `DataEventType`).
public enum DataEventType: Int, Sendable, Hashable, CaseIterable {
    /// A child was added (also once for each existing child when the listener starts).
    case childAdded
    /// A child was removed.
    case childRemoved
    /// A child's data changed.
    case childChanged
    /// A child moved in the query's order.
    case childMoved
    /// The whole data at the location, every time it changes.
    case value

    var eventType: EventType {
        switch self {
        case .childAdded: .childAdded
        case .childRemoved: .childRemoved
        case .childChanged: .childChanged
        case .childMoved: .childMoved
        case .value: .value
        }
    }
}

/// Identifies a listener, for ``DatabaseQuery/removeObserver(withHandle:)``.
public typealias DatabaseHandle = UInt
