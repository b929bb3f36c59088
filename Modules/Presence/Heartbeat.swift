/// How the server tells a live peer from a vanished one, for one connection.
///
/// The server calls ``beat()`` every ``interval`` and pings the peer when it says so; any frame
/// from the peer (a pong included) counts as ``heard()``. A peer that sent nothing for two whole
/// intervals is to be closed, so one that vanishes is detected at most ``detectionBound`` after its
/// last frame; its onDisconnect operations run then.
///
/// ```swift
/// var heartbeat = Heartbeat(interval: .seconds(20))
/// heartbeat.beat()    // .ping
/// heartbeat.beat()    // .ping: silent for one interval
/// heartbeat.beat()    // .close: silent for two
/// ```
public struct Heartbeat: Sendable {
    public enum Action: Sendable, Equatable {
        case ping
        case close
    }

    public let interval: Duration
    private var heardSinceLastBeat = true
    private var silentBeats = 0

    public init(interval: Duration = .seconds(20)) { self.interval = interval }

    /// The longest time between a peer's last frame and the server noticing it is gone.
    public var detectionBound: Duration { interval * 2 }

    /// The peer sent a frame.
    public mutating func heard() { heardSinceLastBeat = true }

    /// One interval passed: what to do now.
    public mutating func beat() -> Action {
        silentBeats = heardSinceLastBeat ? 0 : silentBeats + 1
        heardSinceLastBeat = false
        return silentBeats >= 2 ? .close : .ping
    }
}
