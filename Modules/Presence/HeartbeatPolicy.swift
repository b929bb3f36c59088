/// How the server tells a live peer from a vanished one.
///
/// The server pings every `interval` and drops a connection whose previous ping is still unanswered
/// when the next is due, so a peer that vanishes is detected at most `2 × interval` after its last
/// answer; its onDisconnect operations run then.
public struct HeartbeatPolicy: Sendable, Equatable {
    public var interval: Duration

    public init(interval: Duration = .seconds(20)) { self.interval = interval }

    /// The longest time between a peer vanishing and the server noticing.
    public var detectionBound: Duration { interval * 2 }
}
