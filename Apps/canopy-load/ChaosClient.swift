import Canopy
import Dispatch
import Synchronization

/// One Canopy SDK instance of a chaos run: it listens to the whole namespace (the writer's `w<n>`
/// children) and, on every connection, registers an onDisconnect increment of a counter of that
/// connection's own, `disconnects/c<client>/k<connection>`, as apps register presence in their
/// `.info/connected` observer. At the end the counters say whether each ended connection's
/// operation ran exactly once and the live one's not at all.
final class ChaosClient: Sendable {
    let index: Int
    private let database: Database
    private let queue: DispatchQueue
    private let state = Mutex(State())

    private struct State {
        var connected = false
        /// Connections opened so far; the current one is number `connections`.
        var connections = 0
        var ended: Set<Int> = []
        /// Connections whose registration the server acknowledged while they were current.
        var acknowledgedOnTheirConnection: Set<Int> = []
        /// Registrations acknowledged on a later connection (sent again after theirs dropped
        /// unanswered), by their connection: the later one they were registered on.
        var acknowledgedLater: [Int: Int] = [:]
        var seen: Set<Int> = []
    }

    init(index: Int, url: String, queue: DispatchQueue) {
        self.index = index
        self.queue = queue
        database = Database.database(url: url)
    }

    func start() {
        database.callbackQueue = queue
        database.reference(withPath: ".info/connected").observe(.value) { [self] snapshot in
            connectionChanged(snapshot.value as? Bool ?? false)
        }
        database.reference().observe(.childAdded) { [self] snapshot in
            guard snapshot.key.hasPrefix("w"), let sequence = Int(snapshot.key.dropFirst()) else { return }
            _ = state.withLock { $0.seen.insert(sequence) }
        }
    }

    func stop() { database.goOffline() }

    /// How many of `writes` this client has not seen.
    func missing(of writes: [Int]) -> Int {
        state.withLock { state in writes.count { !state.seen.contains($0) } }
    }

    var connections: Int { state.withLock { $0.connections } }

    private func connectionChanged(_ connected: Bool) {
        let opened = state.withLock { state -> Int? in
            guard connected != state.connected else { return nil }
            state.connected = connected
            if !connected {
                state.ended.insert(state.connections)
                return nil
            }
            state.connections += 1
            return state.connections
        }
        guard let connection = opened else { return }
        let counter = database.reference(withPath: "disconnects/c\(index)/k\(connection)")
        counter.onDisconnectSetValue(ServerValue.increment(1)) { [self] error, _ in
            guard error == nil else { return }
            state.withLock { state in
                if state.connected, state.connections == connection {
                    state.acknowledgedOnTheirConnection.insert(connection)
                } else {
                    state.acknowledgedLater[connection] = state.connections
                }
            }
        }
    }

    /// What the counters `disconnects/c<client>` (connection number → runs) say against what this
    /// client saw: an operation acknowledged on its own connection ran once if that connection
    /// ended and never if not; one sent again on a later connection ran at most twice (once more if
    /// the server had stored it before the first connection dropped) and at least once if that
    /// later connection ended; one never acknowledged ran at most once.
    func check(runs: [Int: Int]) -> ChaosClientCheck {
        state.withLock { state in
            var check = ChaosClientCheck(
                client: index, connections: state.connections, endedConnections: state.ended.count)
            for connection in 1...max(state.connections, 1) {
                let count = runs[connection] ?? 0
                check.runs += count
                let problem: String?
                if state.acknowledgedOnTheirConnection.contains(connection) {
                    let expected = state.ended.contains(connection) ? 1 : 0
                    problem = count == expected ? nil : "ran \(count) times, expected \(expected)"
                } else if let later = state.acknowledgedLater[connection] {
                    let least = state.ended.contains(later) ? 1 : 0
                    problem =
                        (least...2).contains(count)
                        ? nil : "sent again on connection \(later): ran \(count) times, expected \(least) to 2"
                } else {
                    problem = count <= 1 ? nil : "never acknowledged: ran \(count) times, expected at most 1"
                }
                if let problem { check.problems.append("client \(index), connection \(connection): \(problem)") }
            }
            return check
        }
    }
}

/// The onDisconnect check of one ``ChaosClient``.
struct ChaosClientCheck: Encodable {
    var client: Int
    var connections: Int
    var endedConnections: Int
    /// onDisconnect runs counted for this client's connections.
    var runs = 0
    var problems: [String] = []
}
