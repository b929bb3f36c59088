import NIOWebSocket
import Synchronization

/// Live sessions by id, so that a reconnect naming its last session (`ls=`) can end the old one
/// first.
final class SessionRegistry: Sendable {
    private struct State {
        var sessions: [String: (session: RealtimeSession, database: Database)] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Adds a session whose namespace just opened; returns `false`, adding nothing, once
    /// ``closeAll()`` ran: a connection greeted before shutdown whose namespace opened after it
    /// would otherwise stay open on a stopped server.
    func add(_ session: RealtimeSession, database: Database) -> Bool {
        state.withLock { state in
            guard !state.isClosed else { return false }
            state.sessions[session.id] = (session, database)
            return true
        }
    }

    /// Session `id`, while it can be found by a reconnect naming it.
    func session(_ id: String) -> RealtimeSession? {
        state.withLock { $0.sessions[id]?.session }
    }

    /// The live sessions on `database`, for the console's connections view.
    func sessions(on database: Database) -> [RealtimeSession] {
        state.withLock { state in state.sessions.values.filter { $0.database === database }.map(\.session) }
    }

    func remove(_ session: RealtimeSession) {
        _ = state.withLock { $0.sessions.removeValue(forKey: session.id) }
    }

    /// Closes every live session's connection (`going away`), as shutdown does, and every one added
    /// later; each runs its onDisconnect writes as it closes.
    func closeAll() {
        let open = state.withLock { state in
            state.isClosed = true
            return Array(state.sessions.values)
        }
        for (session, _) in open { session.connection.closeAfterPendingMessages(code: .goingAway) }
    }

    /// Closes the connection of every live session on `database` (`going away`): its namespace
    /// moved to another server, where the clients reconnect.
    func closeAll(using database: Database) {
        let using = state.withLock { state in state.sessions.values.filter { $0.database === database } }
        for (session, _) in using { session.connection.closeAfterPendingMessages(code: .goingAway) }
    }

    /// Ends session `id`: runs its onDisconnect writes now (or waits for them, when its socket
    /// closed and it is already running them), stops its listens and closes its connection.
    ///
    /// It is closed with a plain close frame, not control `s`: the official clients take `s` as
    /// "shut down for good" and stop reconnecting, which would stop the newer connection too.
    func end(_ id: String) async {
        guard let (session, database) = state.withLock({ $0.sessions[id] }) else { return }
        await session.handOver(to: database)
        remove(session)
        await database.removeSubscriber(session.subscriberID)
        session.connection.closeAfterPendingMessages(code: .goingAway)
    }
}
