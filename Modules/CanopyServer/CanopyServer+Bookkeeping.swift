import Prometheus
import Query
import Tree

/// What one connection event changes in several places, changed in one step on the namespace's
/// database: a listen and the connection gauge, so that `canopy_listeners_active` never counts a
/// listen of a connection `canopy_connections_open` does not (see ``ServerMetrics/together(_:)``).
extension CanopyServer {
    /// Registers an event stream's listen and counts the stream as an open connection, in one
    /// step; returns `false`, changing nothing, when the rules do not let `caller` read it.
    static func listenAndCount(
        _ subscriber: EventStreamSubscriber, path: Path, params: QueryParams, caller: Caller,
        in database: isolated Database, metrics: ServerMetrics
    ) -> Bool {
        metrics.together {
            let allowed = database.listen(
                subscriber, path: path, params: params, queryID: params.queryIdentifier, tag: nil, hash: nil,
                caller: caller)
            if allowed { metrics.connections.increment() }
            return allowed
        }
    }

    /// Drops every listen of a subscriber that went away and takes its connection out of the
    /// connection gauge, in one step.
    static func dropListensAndUncount(
        _ subscriberID: Int, in database: isolated Database, metrics: ServerMetrics
    ) {
        metrics.together {
            database.removeSubscriber(subscriberID)
            metrics.connections.decrement()
        }
    }
}
