/// One simulated app of a storm: a raw connection replaying the SDK (``StormClient``) or a real SDK
/// instance (``SDKStormClient``).
protocol StormParticipant: AnyObject, Sendable {
    /// Connects and stays connected (reconnecting as the SDK does) until ``stop()`` and cancellation.
    func run() async
    func stop()
    /// Starts round `round` at `time` (monotonic nanoseconds); with `cut`, drops the connection now.
    func startRound(_ round: Int, at time: UInt64, cut: Bool)
    /// Nanoseconds from the cut until back: connected again, listens answered, the write seen.
    var backAfter: UInt64? { get }
    /// Nanoseconds from the cut until the listens were answered on a new connection.
    var restoredAfter: UInt64? { get }
    /// Connection attempts since the cut (for SDK instances: connections made, as attempts are not seen).
    var attemptsSinceCut: Int { get }
}

extension StormClient: StormParticipant {}
