import Synchronization

/// The client connections a graceful shutdown must wait for or end.
///
/// Realtime connections are counted from their hello until their onDisconnect writes were handed
/// to their database: the commit queues finish only after that, so a clean restart never leaves
/// presence data "online". Event streams, which would otherwise stay open for good, are ended when
/// shutdown begins.
final class OpenConnections: Sendable {
    private struct State {
        var realtime = 0
        var streams: [Int: EventStreamSubscriber] = [:]
        var shuttingDown = false
    }

    private let state = Mutex(State())

    /// A realtime connection opened.
    func realtimeOpened() {
        state.withLock { $0.realtime += 1 }
    }

    /// A realtime connection closed and its onDisconnect writes were handed to its database.
    func realtimeClosed() {
        state.withLock { $0.realtime -= 1 }
    }

    /// Tracks an event stream until ``streamEnded(_:)``; one that starts during shutdown is ended at
    /// once.
    func streamStarted(_ stream: EventStreamSubscriber) {
        let refused = state.withLock { state -> Bool in
            if state.shuttingDown { return true }
            state.streams[stream.subscriberID] = stream
            return false
        }
        if refused { stream.finish() }
    }

    func streamEnded(_ stream: EventStreamSubscriber) {
        _ = state.withLock { $0.streams.removeValue(forKey: stream.subscriberID) }
    }

    /// Ends every event stream, now and from now on.
    func endStreams() {
        let streams = state.withLock { state -> [EventStreamSubscriber] in
            state.shuttingDown = true
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }

    /// Returns once no realtime connection is open or still handing over its onDisconnect writes, or
    /// when the calling task is cancelled (the service group's shutdown limit passed).
    func realtimeDrained() async {
        // Shutdown waits at most a few seconds, so a short poll is simpler than a waiter list that
        // must also be woken on cancellation.
        while realtimeCount > 0, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Open realtime connections, for tests and logs.
    var realtimeCount: Int { state.withLock { $0.realtime } }

    /// Event streams that have not ended, for tests and logs.
    var streamCount: Int { state.withLock { $0.streams.count } }
}
