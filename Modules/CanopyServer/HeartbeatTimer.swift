import NIOCore
import Presence
import Synchronization

/// Runs the heartbeat checks of the realtime connections on one event loop from one repeated task,
/// every ``Heartbeat/checkInterval``, instead of a scheduled task per connection (a few hundred
/// bytes that every idle connection held).
///
/// A connection is checked from the first tick after it was added, at most one check interval after
/// it opened, as with a task of its own; ``Heartbeat`` counts its times from the connection's
/// opening either way. The task runs only while some connection is added.
final class HeartbeatTimer: Sendable {
    private let eventLoop: any EventLoop
    private let tick: TimeAmount
    private let state: NIOLoopBoundBox<State>

    private struct State {
        var checks: [ObjectIdentifier: (handler: RealtimeChannelHandler, context: ChannelHandlerContext)] = [:]
        var task: RepeatedTask?
    }

    /// Made on `eventLoop`.
    init(eventLoop: any EventLoop, tick: TimeAmount) {
        self.eventLoop = eventLoop
        self.tick = tick
        state = NIOLoopBoundBox(State(), eventLoop: eventLoop)
    }

    /// Checks `handler`'s heartbeat on every tick until ``remove(_:)`` (on the event loop).
    func add(_ handler: RealtimeChannelHandler, context: ChannelHandlerContext) {
        state.value.checks[ObjectIdentifier(handler)] = (handler, context)
        guard state.value.task == nil else { return }
        state.value.task = eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { [self] _ in
            checkAll()
        }
    }

    /// Stops checking `handler` (on the event loop).
    func remove(_ handler: RealtimeChannelHandler) {
        guard state.value.checks.removeValue(forKey: ObjectIdentifier(handler)) != nil else { return }
        guard state.value.checks.isEmpty else { return }
        // A dictionary keeps its capacity: let that of a past crowd go.
        state.value.checks = [:]
        state.value.task?.cancel()
        state.value.task = nil
    }

    private func checkAll() {
        // A check may close its connection, which removes it: walk the ticks' own copy.
        let checks = state.value.checks
        for (handler, context) in checks.values { handler.checkHeartbeat(context: context) }
    }
}

/// One ``HeartbeatTimer`` per event loop.
final class HeartbeatTimers: Sendable {
    private let tick: TimeAmount
    private let timers = Mutex<[ObjectIdentifier: HeartbeatTimer]>([:])

    init(heartbeatInterval: Duration) {
        tick = TimeAmount(Heartbeat(interval: heartbeatInterval).checkInterval)
    }

    /// The timer of `eventLoop` (called on it).
    func timer(for eventLoop: any EventLoop) -> HeartbeatTimer {
        timers.withLock { timers in
            let key = ObjectIdentifier(eventLoop)
            if let timer = timers[key] { return timer }
            let timer = HeartbeatTimer(eventLoop: eventLoop, tick: tick)
            timers[key] = timer
            return timer
        }
    }
}
