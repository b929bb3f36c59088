import Dispatch
import NIOCore
import RealtimeClientSocket
import Synchronization
import Transport
import Tree

/// Where a storm's data lives: each client's own location, and one every client listens to.
enum StormLayout {
    static let namespace = "bench"
    static let root = "storm"
    static let shared = "storm/shared"

    static func own(_ index: Int) -> String { "storm/users/c\(index)" }

    /// A client's own data: small, and never changed.
    static func ownJSON(_ index: Int) -> String { #"{"name":"client \#(index)"}"# }

    static let sharedJSON = "1"

    /// The whole `storm` node, for one REST write before the clients connect.
    static func seedJSON(clients: Int) -> String {
        let users = (0..<clients).map { #""c\#($0)":"# + ownJSON($0) }.joined(separator: ",")
        return #"{"shared":"# + sharedJSON + #","users":{"# + users + "}}"
    }
}

/// What went wrong in a storm, said so that whoever runs the suite can act on it.
enum StormError: Error, CustomStringConvertible {
    case seedFailed(status: Int, body: String)
    case notRestored(restored: Int, clients: Int, seconds: Int)
    case serverConnections(open: Int?, expected: Int)
    case dataResent(Int)
    case dropped(Int)
    case fileLimit(needed: UInt64, limit: UInt64)
    case invalidData(String)
    case clientProcess(String)

    var description: String {
        switch self {
        case .seedFailed(let status, let body):
            "the seed write was answered \(status): \(body.prefix(200))"
        case .notRestored(let restored, let clients, let seconds):
            "only \(restored) of \(clients) clients had both listens answered within \(seconds) s"
        case .serverConnections(let open, let expected):
            "the server counts \(open.map(String.init) ?? "no") open connections, not \(expected)"
        case .dataResent(let count):
            "the server sent data \(count) times although every listen carried the hash of the data held"
        case .dropped(let count):
            "the server closed \(count) connections whose listens were answered"
        case .fileLimit(let needed, let limit):
            "the storm needs about \(needed) file descriptors, but the limit is \(limit) even at the hard "
                + "limit (raise it: `ulimit -Hn`)"
        case .clientProcess(let reason):
            "the storm's client process: \(reason)"
        case .invalidData(let reason):
            "the storm's address or data does not parse: \(reason)"
        }
    }
}

/// Counts shared by the clients of one storm.
final class StormCounters: Sendable {
    /// Data messages from the server: each one means a listen's hash was not taken as proof that
    /// the client holds the data.
    let dataPushes = Atomic<Int>(0)
    /// Connections that failed or closed before both listens were answered, then tried again.
    let retries = Atomic<Int>(0)
    /// Connections the server closed after their listens were answered (not cut by the storm).
    let dropped = Atomic<Int>(0)

    func dataPushed() { dataPushes.add(1, ordering: .relaxed) }
}

/// A storm of `clients` raw realtime connections: each listens to a location of its own and to the
/// shared one; ``cutAll(timeout:)`` resets every socket at once and each client connects again right away.
///
/// At most ``window`` connections are being set up at a time (connected, upgraded, greeted, both
/// listens sent and answered): every client still reconnects as soon as it can, but the accept
/// queue of the server never overflows, so the time measured is the server restoring listens, not
/// TCP's SYN retransmission timer (1 s, then 3 s). `canopy-load storm` measures that case, with the
/// SDK's backoff.
final class Storm: Sendable {
    /// Connections being set up at once.
    static let window = 128

    let clientCount: Int
    let counters = StormCounters()
    private let port: Int
    private let target = "/.ws?v=5&ns=\(StormLayout.namespace)"
    private let state = Mutex(State())
    private let clientList = Mutex<[StormClient]>([])

    private struct State {
        var pending: [StormClient] = []
        var nextPending = 0
        var inFlight = 0
        var restored = 0
        var allRestored: DispatchSemaphore?

        /// The next queued client, which takes over a finished connection's place in the window (or
        /// `nil`, and the place is free).
        mutating func takeNext() -> StormClient? {
            guard nextPending < pending.count else {
                inFlight -= 1
                pending.removeAll(keepingCapacity: true)
                nextPending = 0
                return nil
            }
            defer { nextPending += 1 }
            return pending[nextPending]
        }
    }

    /// Prepares `clients` clients of the server at `127.0.0.1:port` (nothing connects yet).
    init(clients: Int, port: Int) throws(StormError) {
        clientCount = clients
        self.port = port
        let sharedHash = try Self.hash(StormLayout.sharedJSON)
        var list: [StormClient] = []
        list.reserveCapacity(clients)
        for index in 0..<clients {
            let ownHash = try Self.hash(StormLayout.ownJSON(index))
            list.append(
                StormClient(
                    storm: self,
                    listens: [
                        Self.listen(1, path: StormLayout.own(index), hash: ownHash),
                        Self.listen(2, path: StormLayout.shared, hash: sharedHash),
                    ]))
        }
        clientList.withLock { $0 = list }
    }

    var clients: [StormClient] { clientList.withLock { $0 } }

    /// Connects every client and waits (blocking the calling thread) until each one's listens are
    /// answered.
    func connectAll(timeout: Duration) throws(StormError) {
        for client in clients { enqueue(client) }
        try waitUntilRestored(timeout: timeout)
    }

    /// Cuts every client's connection at once, then waits (blocking the calling thread) until each
    /// client, connected again, has its listens answered.
    func cutAll(timeout: Duration) throws(StormError) {
        state.withLock { $0.restored = 0 }
        for client in clients { client.cut() }
        try waitUntilRestored(timeout: timeout)
    }

    private func waitUntilRestored(timeout: Duration) throws(StormError) {
        let signal = DispatchSemaphore(value: 0)
        let done = state.withLock { state in
            guard state.restored < clientCount else { return true }
            state.allRestored = signal
            return false
        }
        if !done { _ = signal.wait(timeout: .now() + .seconds(Int(timeout.components.seconds))) }
        let restored = state.withLock { state in
            state.allRestored = nil
            return state.restored
        }
        guard restored == clientCount else {
            throw .notRestored(restored: restored, clients: clientCount, seconds: Int(timeout.components.seconds))
        }
    }

    /// Resets every connection and stops reconnecting (a reset leaves no socket in TIME_WAIT, so
    /// the ephemeral ports are free for the next storm at once); the storm lets go of its clients.
    func stop() {
        for client in clients { client.stop() }
        clientList.withLock { $0 = [] }
    }

    // MARK: Called by the clients

    /// Starts `client`'s connection now if the window has room, or when it has.
    func enqueue(_ client: StormClient) {
        let start = state.withLock { state in
            guard state.inFlight < Self.window else {
                state.pending.append(client)
                return false
            }
            state.inFlight += 1
            return true
        }
        if start { open(client) }
    }

    /// `client`'s listens are both answered: its place in the window goes to the next client.
    func restored(_ client: StormClient) {
        let (next, allRestored) = state.withLock { state in
            state.restored += 1
            return (state.takeNext(), state.restored == clientCount ? state.allRestored : nil)
        }
        allRestored?.signal()
        if let next { open(next) }
    }

    /// `client`'s connection failed or closed before its listens were answered: it gives up its
    /// place in the window and queues again.
    func retry(_ client: StormClient) {
        counters.retries.add(1, ordering: .relaxed)
        let next = state.withLock { $0.takeNext() }
        if let next { open(next) }
        enqueue(client)
    }

    private func open(_ client: StormClient) {
        client.opening()
        StormConnection.open(client, port: port, target: target)
    }

    private static func hash(_ json: String) throws(StormError) -> String {
        do {
            return try Node(jsonText: json).hash
        } catch {
            throw .invalidData("\(json): \(error)")
        }
    }

    private static func listen(_ number: Int, path: String, hash: String) -> String {
        let request = ClientRequest(number: number, action: .listen(path: path, query: nil, tag: nil, hash: hash))
        return ClientMessage.request(request).json.serialized()
    }
}

/// One simulated app: its two listen requests, spelled once, and its current connection.
final class StormClient: Sendable {
    let storm: Storm
    /// The listen requests sent on every connection, with the hash of the data the client holds.
    let listens: [String]
    private let state = Mutex(State())

    private struct State {
        var socket: RealtimeSocket?
        var isRestored = false
        var isCut = false
        var isStopped = false
    }

    init(storm: Storm, listens: [String]) {
        self.storm = storm
        self.listens = listens
    }

    /// Resets the connection; ``closed()`` then queues the client to connect again.
    func cut() {
        let socket = state.withLock { state in
            state.isCut = true
            return state.socket
        }
        socket?.abort()
    }

    func stop() {
        let socket = state.withLock { state in
            state.isStopped = true
            return state.socket
        }
        socket?.abort()
    }

    // MARK: From the connection

    /// A new connection is about to be made.
    func opening() {
        state.withLock { state in
            state.isRestored = false
            state.isCut = false
        }
    }

    /// The connection is upgraded (its hello, even its listens' answers, may have come already).
    func connected(_ socket: RealtimeSocket) {
        let isStopped = state.withLock { state in
            // A connection already closed must not take the place of the next one.
            if socket.channel.isActive { state.socket = socket }
            return state.isStopped
        }
        if isStopped { socket.abort() }
    }

    func failed() {
        guard !state.withLock({ $0.isStopped }) else { return }
        storm.retry(self)
    }

    func restored() {
        state.withLock { $0.isRestored = true }
        storm.restored(self)
    }

    func closed() {
        let (wasRestored, wasCut, isStopped) = state.withLock { state in
            state.socket = nil
            defer { state.isRestored = false }
            return (state.isRestored, state.isCut, state.isStopped)
        }
        guard !isStopped else { return }
        if !wasRestored {
            storm.retry(self)
            return
        }
        if !wasCut { storm.counters.dropped.add(1, ordering: .relaxed) }
        storm.enqueue(self)
    }
}
