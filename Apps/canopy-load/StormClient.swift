import Foundation
import NIOCore
import NIOPosix
import RealtimeClientSocket
import Synchronization
import Transport
import Tree

/// Counts shared by every client of a storm.
final class StormTally: Sendable {
    /// Clients whose first two listens were answered.
    let ready = Atomic<Int>(0)
    /// Clients back in the current round.
    let back = Atomic<Int>(0)
    /// Clients whose connection is greeted (hello received) and still open.
    let connected = Atomic<Int>(0)
    /// Connection attempts, and those that failed (refused, timed out, not upgraded).
    let attempts = Atomic<Int>(0)
    let failedAttempts = Atomic<Int>(0)
    /// Pushes of a client's own data after a reconnect: each one means the server did not take the
    /// hash the client sent as proof it already holds that data.
    let ownDataResent = Atomic<Int>(0)
    /// Listens answered with anything but `ok`, by status.
    let listenRefusals = Refusals()
    /// Why clients cannot connect at all (the server refused the token): the run ends at once.
    let failure = Mutex<LoadError?>(nil)

    /// Records `error` as the reason the run cannot go on (the first one is kept).
    func fail(_ error: LoadError) {
        failure.withLock { if $0 == nil { $0 = error } }
    }
}

/// Where a storm's data lives: each client's own location, and one location every client listens to.
struct StormLayout: Sendable {
    static let root = "storm"
    static let shared = "storm/shared"

    static func own(_ index: Int) -> String { "storm/users/c\(index)" }
}

/// One simulated app for `canopy-load storm`: a raw realtime connection that behaves on reconnect as
/// the Canopy SDK does (Repo+Connection.swift). It waits the SDK's backoff (``ReconnectBackoff``
/// from module RealtimeClientSocket, the very type the SDK uses) before each new attempt, names its last
/// session (`ls=`), sends the stats request, then listens again to its two locations with the hash
/// of the data it holds for each (`Node.hash`, as the SDK's sync tree computes it), so data that did
/// not change is not sent again.
final class StormClient: Sendable {
    let index: Int
    let ownPath: String
    private let host: String
    private let port: Int
    private let namespace: String
    private let authToken: String?
    private let tally: StormTally
    private let state = Mutex(State())

    private struct State {
        /// The session id of the last hello, sent as `ls=` on the next connection.
        var sessionID: String?
        /// The data the client holds for its two listens (the SDK's server cache).
        var own = Node.empty
        var shared = Node.empty
        var connection: LoadConnection?
        /// Attempts are numbered; each connection's events carry its attempt's number.
        var attempt = 0
        var greeted = 0
        var ownListened = 0
        var sharedListened = 0
        var closed = 0
        var closeWaiter: CheckedContinuation<Void, Never>?
        var stopped = false
        var wasReady = false
        // The current round: the cut, and when this client was back after it.
        var round = 0
        var cutAttempt = 0
        var cutAt: UInt64 = 0
        var backAfter: UInt64?
        var restoredAfter: UInt64?
        var attemptsSinceCut = 0
    }

    /// With `authToken`, each connection authenticates with it before it listens.
    init(index: Int, host: String, port: Int, namespace: String, authToken: String?, tally: StormTally) {
        self.index = index
        self.ownPath = StormLayout.own(index)
        self.host = host
        self.port = port
        self.namespace = namespace
        self.authToken = authToken
        self.tally = tally
    }

    /// Nanoseconds from the cut to this client being back, if it is.
    var backAfter: UInt64? { state.withLock { $0.backAfter } }

    /// Nanoseconds from the cut to this client's listens being answered on a new connection, if
    /// they are (whether or not the write after the cut had reached it).
    var restoredAfter: UInt64? { state.withLock { $0.restoredAfter } }

    /// Connection attempts since the cut.
    var attemptsSinceCut: Int { state.withLock { $0.attemptsSinceCut } }

    /// Connects, and reconnects whenever the connection ends, until ``stop()``. Like the SDK, each
    /// attempt after a lost connection or a failed attempt waits the backoff's next delay. At each
    /// cut the backoff starts again from its first delay, as for an app whose connection had lasted
    /// the 30 s that reset it.
    func run() async {
        var backoff = ReconnectBackoff()
        var backoffRound = 0
        while true {
            let (attempt, lastSession, stopped) = state.withLock { state in
                state.attempt += 1
                if state.round > 0 { state.attemptsSinceCut += 1 }
                return (state.attempt, state.sessionID, state.stopped)
            }
            if stopped { return }
            tally.attempts.add(1, ordering: .relaxed)
            do {
                var uri = "/.ws?v=5&ns=\(namespace)"
                if let lastSession { uri += "&ls=\(lastSession)" }
                let connection = try await LoadConnection.connect(
                    host: host, port: port, uri: uri, group: MultiThreadedEventLoopGroup.singleton,
                    connectTimeout: .seconds(30), authToken: authToken
                ) { [self] in StormSession(client: self, attempt: attempt) }
                let keep = state.withLock { state in
                    guard !state.stopped else { return false }
                    state.connection = connection
                    return true
                }
                guard keep else {
                    connection.close()
                    return
                }
                // The SDK gives up on a connection whose hello has not come within 30 s.
                let helloTimeout = connection.channel.eventLoop.scheduleTask(in: .seconds(30)) { [self] in
                    if state.withLock({ $0.greeted != attempt }) { connection.close() }
                }
                let opened = ContinuousClock.now
                await waitForClose(of: attempt)
                helloTimeout.cancel()
                backoff.connectionLasted(ContinuousClock.now - opened)
            } catch let error as LoadError {
                tally.failedAttempts.add(1, ordering: .relaxed)
                // A refused token is refused again on every attempt.
                if case .tokenRefused(_, let status, _) = error, status != "closed" {
                    tally.fail(error)
                    return
                }
            } catch {
                tally.failedAttempts.add(1, ordering: .relaxed)
            }
            let round = state.withLock { $0.round }
            if round != backoffRound {
                backoff.reset()
                backoffRound = round
            }
            do {
                try await Task.sleep(for: backoff.nextDelay())
            } catch {
                return
            }
        }
    }

    /// Ends the connection and the reconnect loop (cancel the task running ``run()`` too).
    func stop() {
        let connection = state.withLock { state in
            state.stopped = true
            return state.connection
        }
        connection?.close()
    }

    /// Starts round `round` at `time`: what the client does from here on counts toward being back.
    /// With `cut`, the connection is aborted now; otherwise the server's restart will end it.
    func startRound(_ round: Int, at time: UInt64, cut: Bool) {
        let connection = state.withLock { state in
            state.round = round
            state.cutAt = time
            state.cutAttempt = state.attempt
            state.backAfter = nil
            state.restoredAfter = nil
            state.attemptsSinceCut = 0
            return state.connection
        }
        if cut { connection?.abort() }
    }

    // MARK: On the connection's event loop

    /// One message of connection `attempt`.
    fileprivate func received(_ message: ServerMessage, attempt: Int, output: inout LoadOutput) {
        switch message {
        case .hello(_, _, _, let sessionID, _):
            let (ownHash, sharedHash) = state.withLock { state in
                state.sessionID = sessionID
                state.greeted = attempt
                return (state.own.hash, state.shared.hash)
            }
            tally.connected.add(1, ordering: .relaxed)
            // What the SDK sends once greeted (its token went first, no pending writes here).
            output.send(Self.request(1, .stats(["c": ["sdk.swift.canopy": 1]])))
            output.send(Self.request(2, .listen(path: ownPath, query: nil, tag: nil, hash: ownHash)))
            output.send(Self.request(3, .listen(path: StormLayout.shared, query: nil, tag: nil, hash: sharedHash)))
        case .overwrite(let path, let data, _):
            guard let node = try? Node(json: data) else { return }
            state.withLock { state in
                if path == ownPath {
                    state.own = node
                    if state.round > 0, attempt > state.cutAttempt { tally.ownDataResent.add(1, ordering: .relaxed) }
                } else if path == StormLayout.shared {
                    state.shared = node
                }
                checkProgress(&state, attempt: attempt)
            }
        case .merge(let path, .object(let members), _):
            state.withLock { state in
                for (relative, value) in members {
                    guard let node = try? Node(json: value) else { continue }
                    if path == ownPath {
                        state.own = state.own.updating(at: Path(relative), to: node)
                    } else if path == StormLayout.shared {
                        state.shared = state.shared.updating(at: Path(relative), to: node)
                    }
                }
                checkProgress(&state, attempt: attempt)
            }
        case .response(let number, let status, _):
            guard number == 2 || number == 3 else { return }
            guard status == .ok else {
                tally.listenRefusals.add(status.text)
                return
            }
            state.withLock { state in
                if number == 2 { state.ownListened = attempt } else { state.sharedListened = attempt }
                checkProgress(&state, attempt: attempt)
            }
        case .ping:
            output.send(ClientMessage.pong.json.serialized())
        default:
            break
        }
    }

    /// Counts the client ready (first listens answered) or back (after the cut: greeted again, both
    /// listens answered on the new connection, and the shared location shows this round's write).
    private func checkProgress(_ state: inout State, attempt: Int) {
        guard state.greeted == attempt, state.ownListened == attempt, state.sharedListened == attempt else { return }
        if !state.wasReady {
            state.wasReady = true
            tally.ready.add(1, ordering: .relaxed)
        }
        guard state.round > 0, state.backAfter == nil, attempt > state.cutAttempt else { return }
        let now = monotonicNanoseconds()
        if state.restoredAfter == nil { state.restoredAfter = now - state.cutAt }
        guard case .number(let seen)? = state.shared.leafValue, seen >= Double(state.round) else { return }
        state.backAfter = now - state.cutAt
        tally.back.add(1, ordering: .relaxed)
    }

    fileprivate func closed(attempt: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.greeted == attempt { tally.connected.subtract(1, ordering: .relaxed) }
            state.closed = max(state.closed, attempt)
            state.connection = nil
            defer { state.closeWaiter = nil }
            return state.closeWaiter
        }
        waiter?.resume()
    }

    private func waitForClose(of attempt: Int) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.closed >= attempt { return true }
                state.closeWaiter = waiter
                return false
            }
            if done { waiter.resume() }
        }
    }

    private static func request(_ number: Int, _ action: ClientAction) -> String {
        ClientMessage.request(ClientRequest(number: number, action: action)).json.serialized()
    }
}

/// The session of one storm connection: decodes each message as the SDK does and hands it on.
private final class StormSession: LoadSession {
    private let client: StormClient
    private let attempt: Int

    init(client: StormClient, attempt: Int) {
        self.client = client
        self.attempt = attempt
    }

    func received(_ message: String, output: inout LoadOutput) {
        guard let json = try? JSONValue(parsing: message), let decoded = try? ServerMessage(json: json) else { return }
        client.received(decoded, attempt: attempt, output: &output)
    }

    func closed() { client.closed(attempt: attempt) }
}
