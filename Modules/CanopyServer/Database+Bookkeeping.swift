import Prometheus
import Query
import Tree

/// What one connection event changes in several places, changed in one step on the namespace's
/// database: a listen and the connection gauge, so that `canopy_listeners_active` never counts a
/// listen of a connection `canopy_connections_open` does not (see ``ServerMetrics/together(_:)``).
extension Database {
    /// Registers an event stream's listen and counts the stream as an open connection, in one
    /// step; returns `false`, changing nothing, when the rules do not let `caller` read it.
    func listenAndCount(_ subscriber: EventStreamSubscriber, path: Path, params: QueryParams, caller: Caller) -> Bool {
        metrics.together {
            let allowed = listen(
                subscriber, path: path, params: params, queryID: params.queryIdentifier, tag: nil, hash: nil,
                caller: caller)
            if allowed { metrics.connections.increment() }
            return allowed
        }
    }

    /// Drops every listen of a subscriber that went away and takes its connection out of the
    /// connection gauge, in one step.
    func dropListensAndUncount(_ subscriberID: Int) {
        metrics.together {
            removeSubscriber(subscriberID)
            metrics.connections.decrement()
        }
    }
}
