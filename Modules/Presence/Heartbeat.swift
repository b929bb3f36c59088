/// How the server tells a live peer from a vanished one, for one connection.
///
/// The server calls ``check(at:)`` every ``checkInterval`` (a quarter of ``interval``) with the
/// time since the connection opened, and reports each frame from the peer (a pong included) with
/// ``heard(at:)``. It pings the peer once per ``interval``; a peer that sent nothing for almost two
/// intervals is to be closed, so one that vanishes is detected at most ``detectionBound`` after
/// its last frame, and never before a whole ``interval`` of silence. Its onDisconnect operations
/// run then.
///
/// A check that comes more than two check intervals after the one before it does not close: the
/// server itself was not running, and what the peer sent meanwhile may still wait to be read. The
/// next check decides, even if it is late too, so a server that stays overloaded still closes
/// vanished peers.
///
/// ```swift
/// var heartbeat = Heartbeat(interval: .seconds(20))    // checked every 5 s
/// heartbeat.heard(at: .seconds(1))
/// heartbeat.check(at: .seconds(20))    // .ping
/// heartbeat.check(at: .seconds(25))    // nil: nothing to do
/// heartbeat.check(at: .seconds(30))    // nil
/// heartbeat.check(at: .seconds(35))    // nil: silent for 34 s
/// heartbeat.check(at: .seconds(40))    // .close: silent for 39 s (limit: 2 intervals less one check)
/// ```
public struct Heartbeat: Sendable {
    public enum Action: Sendable, Equatable {
        case ping
        case close
    }

    public let interval: Duration
    /// Times are durations since the connection opened, which counts as heard.
    private var lastHeard: Duration = .zero
    private var lastPing: Duration = .zero
    private var lastCheck: Duration = .zero
    private var forgaveLastCheck = false

    public init(interval: Duration = .seconds(20)) { self.interval = interval }

    /// The longest time between a peer's last frame and the server noticing it is gone.
    public var detectionBound: Duration { interval * 2 }

    /// How often ``check(at:)`` must be called for ``detectionBound`` to hold.
    public var checkInterval: Duration { interval / 4 }

    /// The silence after which a peer is gone: one check short of the bound, because the check
    /// that sees the silence may come up to one ``checkInterval`` after it began to exceed it.
    private var silenceLimit: Duration { detectionBound - checkInterval }

    /// The peer sent a frame at `time` (since the connection opened).
    public mutating func heard(at time: Duration) {
        if time > lastHeard { lastHeard = time }
    }

    /// What to do at `time` (since the connection opened); `nil` when nothing is due.
    public mutating func check(at time: Duration) -> Action? {
        let forgiven = time - lastCheck > checkInterval * 2 && !forgaveLastCheck
        forgaveLastCheck = forgiven
        lastCheck = time
        return action(at: time, mayClose: !forgiven)
    }

    private mutating func action(at time: Duration, mayClose: Bool) -> Action? {
        if mayClose, time - lastHeard >= silenceLimit { return .close }
        guard time - lastPing >= interval else { return nil }
        lastPing = time
        return .ping
    }
}
