import RealtimeClientSocket
import SyncEngine
import Synchronization
import Transport

/// What the SDK needs from a connection to a server: the greeting, the server's messages in
/// order, and a way to send. ``RealtimeClient`` is the real one; tests may script their own.
protocol ServerLink: Sendable {
    var hello: RealtimeHello { get }
    /// Every message after the hello; finishes when the connection ends.
    var messages: AsyncStream<ServerMessage> { get }
    @discardableResult func send(_ message: ClientMessage) -> Bool
    func close()
}

extension RealtimeClient: ServerLink {}

/// Opens a connection to `endpoint`, naming the previous session (`ls=`) when there was one.
typealias Connector = @Sendable (_ endpoint: RealtimeEndpoint, _ lastSession: String?) async throws -> any ServerLink

/// Records the listens a ``SyncTree`` asks for while it is being changed, so the repo can send
/// them once the change is done (the tree calls its provider in the middle of a mutation).
final class ListenRequests: ListenProvider {
    enum Request: Sendable {
        case start(QuerySpec, tag: Int?)
        case stop(QuerySpec, tag: Int?)
    }

    private let pending = Mutex<[Request]>([])

    func startListening(_ query: QuerySpec, tag: Int?) { pending.withLock { $0.append(.start(query, tag: tag)) } }

    func stopListening(_ query: QuerySpec, tag: Int?) { pending.withLock { $0.append(.stop(query, tag: tag)) } }

    /// The requests since the last call, in order.
    func take() -> [Request] {
        pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
    }
}

/// A listen tree for `.info`: its data is set by the client itself, never fetched.
final class NoListens: ListenProvider {
    func startListening(_ query: QuerySpec, tag: Int?) {}
    func stopListening(_ query: QuerySpec, tag: Int?) {}
}
