import Foundation
import Logging
import Presence
import Query
import Synchronization
import Transport
import Tree

/// One realtime-protocol connection: its outbound queue, listens and onDisconnect operations.
final class RealtimeConnection: Subscriber {
    let subscriberID = SubscriberIDs.make()
    let sessionID: String
    private let outbound: AsyncStream<String>.Continuation
    let messages: AsyncStream<String>
    private let state = Mutex(State())

    struct State {
        var disconnect = DisconnectOperations()
        /// Set once the operations were run (on close, or when a newer connection took over).
        var retired = false
    }

    init() {
        sessionID = Self.makeSessionID()
        (messages, outbound) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
    }

    private static func makeSessionID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<32).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    func deliver(_ push: Push) { outbound.yield(push.wireText) }

    func send(_ message: ServerMessage) { outbound.yield(message.text) }

    func finishOutbound() { outbound.finish() }

    func register(_ operation: DisconnectOperation) -> Bool {
        state.withLock { state in
            guard !state.retired else { return false }
            state.disconnect.register(operation)
            return true
        }
    }

    func cancelDisconnect(below path: Path) {
        state.withLock { $0.disconnect.cancel(below: path) }
    }

    /// Takes the onDisconnect operations to run, at most once.
    func retire() -> [DisconnectOperation] {
        state.withLock { state in
            guard !state.retired else { return [] }
            state.retired = true
            return state.disconnect.takeAll()
        }
    }

    var isRetired: Bool { state.withLock { $0.retired } }
}

/// Live connections by session id, so that a reconnect naming its last session (`ls=`) can end
/// the old connection first.
final class SessionRegistry: Sendable {
    private let sessions = Mutex<[String: (connection: RealtimeConnection, database: Database)]>([:])

    func add(_ connection: RealtimeConnection, database: Database) {
        sessions.withLock { $0[connection.sessionID] = (connection, database) }
    }

    func remove(_ connection: RealtimeConnection) {
        _ = sessions.withLock { $0.removeValue(forKey: connection.sessionID) }
    }

    /// Ends session `id`: runs its onDisconnect writes now and stops its listens.
    func end(_ id: String) async {
        guard let (connection, database) = sessions.withLock({ $0.removeValue(forKey: id) }) else { return }
        await CanopyServer.disconnect(connection, from: database)
        connection.send(.shutdown(reason: "replaced by a newer connection of the same client"))
        connection.finishOutbound()
    }
}

extension CanopyServer {
    /// Runs a closing connection's onDisconnect writes and drops its listens.
    static func disconnect(_ connection: RealtimeConnection, from database: Database) async {
        let operations = connection.retire()
        await database.removeSubscriber(connection.subscriberID)
        guard !operations.isEmpty else { return }
        await database.runDisconnectWrites(
            operations.map { operation in
                switch operation.kind {
                case .set(let json): (operation.path, json, false)
                case .update(let members): (operation.path, .object(members), true)
                }
            })
    }
}
