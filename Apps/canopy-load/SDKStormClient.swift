import Canopy
import Dispatch
import Synchronization

/// One storm client that is a real Canopy SDK instance (`Database.database(url:)` with a URL of its
/// own, so each has its own connection), observing the same two locations as a ``StormClient``.
///
/// It shows what the SDK itself does in a storm, at the price of the SDK's own CPU in this process
/// (a sync tree, tasks and a WebSocket client per instance), which real apps spend on their own
/// devices. Its sockets cannot be reached from outside, so it takes part in restarts only.
final class SDKStormClient: Sendable {
    private let database: Database
    private let index: Int
    private let tally: StormTally
    private let queue: DispatchQueue
    private let state = Mutex(State())

    private struct State {
        var sawOwn = false
        var shared: Double?
        var connected = false
        var wasReady = false
        var round = 0
        var cutAt: UInt64 = 0
        var backAfter: UInt64?
        var connectionsSinceCut = 0
        var stopped = false
    }

    /// With `authToken`, the instance signs in with it (`setAuthToken`); a refusal of the token or
    /// of a listen is recorded in `tally`.
    init(index: Int, url: String, authToken: String?, tally: StormTally, queue: DispatchQueue) {
        self.index = index
        self.tally = tally
        self.queue = queue
        database = Database.database(url: url)
        if let authToken {
            database.setAuthToken(authToken)
            let server = url
            database.observeAuthState { state in
                if case .refused(let status, let reason) = state {
                    tally.fail(.tokenRefused(server: server, status: status, reason: reason))
                }
            }
        }
    }

    func run() async {
        database.callbackQueue = queue
        database.reference(withPath: ".info/connected").observe(.value) { [self] snapshot in
            connectionChanged(snapshot.value as? Bool ?? false)
        }
        let refused: @Sendable (any Error) -> Void = { [tally] error in
            tally.listenRefusals.add((error as? DatabaseError)?.code ?? "\(error)")
        }
        database.reference(withPath: StormLayout.own(index)).observe(
            .value,
            with: { [self] _ in
                state.withLock { state in
                    state.sawOwn = true
                    checkProgress(&state)
                }
            }, withCancel: refused)
        database.reference(withPath: StormLayout.shared).observe(
            .value,
            with: { [self] snapshot in
                let value = (snapshot.value as? Int).map(Double.init) ?? snapshot.value as? Double
                state.withLock { state in
                    state.shared = value
                    checkProgress(&state)
                }
            }, withCancel: refused)
        while !Task.isCancelled, !state.withLock({ $0.stopped }) {
            try? await Task.sleep(for: .seconds(1))
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        database.goOffline()
    }

    func startRound(_ round: Int, at time: UInt64, cut: Bool) {
        state.withLock { state in
            state.round = round
            state.cutAt = time
            state.backAfter = nil
            state.connectionsSinceCut = 0
        }
    }

    var backAfter: UInt64? { state.withLock { $0.backAfter } }

    /// The SDK does not say when a listen is answered: the write's arrival is the first sign of it.
    var restoredAfter: UInt64? { backAfter }

    var attemptsSinceCut: Int { state.withLock { $0.connectionsSinceCut } }

    private func connectionChanged(_ connected: Bool) {
        state.withLock { state in
            guard connected != state.connected else { return }
            state.connected = connected
            if connected {
                tally.connected.add(1, ordering: .relaxed)
                tally.attempts.add(1, ordering: .relaxed)
                if state.round > 0 { state.connectionsSinceCut += 1 }
            } else {
                tally.connected.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// Ready once both locations had their first value; back once, after the cut, the shared
    /// location shows the round's write (only the server can have sent it, on a new connection).
    private func checkProgress(_ state: inout State) {
        guard state.sawOwn, let shared = state.shared else { return }
        if !state.wasReady {
            state.wasReady = true
            tally.ready.add(1, ordering: .relaxed)
        }
        guard state.round > 0, state.backAfter == nil, shared >= Double(state.round) else { return }
        state.backAfter = monotonicNanoseconds() - state.cutAt
        tally.back.add(1, ordering: .relaxed)
    }
}

extension SDKStormClient: StormParticipant {}
