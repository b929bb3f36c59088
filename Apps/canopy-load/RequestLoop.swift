import Histogram
import Synchronization

/// Latencies of request loops (``RequestLoopSession``), kept apart by the phase of the run each
/// request was sent in ("unloaded", "stalled"; "before", "during", "after"): a run compares the
/// same clients' latencies with and without the load it adds.
final class PhasedLatencies: Sendable {
    /// The phase requests are sent in now; -1 once stopped.
    private let current = Atomic<Int>(0)
    private let histograms: Mutex<[Histogram<UInt64>]>
    /// Answers whose status was not `ok` (they count in the latencies too), and their statuses.
    let failures = Atomic<Int>(0)
    let refusals = Refusals()
    /// Loops that stopped: after ``stop()``, or because their connection closed.
    let loopsDone = Atomic<Int>(0)
    /// Loops whose connection closed before ``stop()``.
    let closedEarly = Atomic<Int>(0)

    init(phases: Int) {
        histograms = Mutex(Array(repeating: makeHistogram(), count: phases))
    }

    /// The phase requests are sent in now, or -1 once stopped.
    var phase: Int { current.load(ordering: .relaxed) }

    /// Requests sent from now on count in `phase`.
    func begin(_ phase: Int) { current.store(phase, ordering: .relaxed) }

    /// No more requests are sent; those in flight are still recorded when answered.
    func stop() { current.store(-1, ordering: .relaxed) }

    func record(_ nanoseconds: UInt64, phase: Int) {
        histograms.withLock { _ = $0[phase].record(nanoseconds) }
    }

    func histogram(_ phase: Int) -> Histogram<UInt64> { histograms.withLock { $0[phase] } }

    func figures(_ phase: Int) -> LatencyFigures { LatencyFigures(histogram(phase)) }

    /// Answers recorded in all phases so far.
    var count: UInt64 { histograms.withLock { $0.reduce(0) { $0 + $1.totalCount } } }

    /// Waits until `loops` loops are done (after ``stop()``, each once its last request is answered)
    /// or `timeout` passed; returns whether they all are.
    func waitForLoops(_ loops: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while loopsDone.load(ordering: .relaxed) < loops {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}

/// One realtime connection that sends one request at a time (a write, a read), the next as soon as
/// the last is answered, and records each answer's latency under the phase it was sent in, until
/// ``PhasedLatencies/stop()``.
final class RequestLoopSession: LoadSession {
    private let latencies: PhasedLatencies
    /// The text of request `number`.
    private let request: @Sendable (Int) -> String
    private var number = 0
    private var sentAt: UInt64 = 0
    private var sentPhase = 0
    private var done = false

    init(latencies: PhasedLatencies, request: @escaping @Sendable (Int) -> String) {
        self.latencies = latencies
        self.request = request
    }

    func received(_ message: String, output: inout LoadOutput) {
        guard !done else { return }
        if number == 0 {
            if MessageText.isHello(message) { sendNext(&output) }
            return
        }
        guard MessageText.responseNumber(message) == number else { return }
        latencies.record(monotonicNanoseconds() - sentAt, phase: sentPhase)
        let status = MessageText.status(message) ?? "no status"
        if status != "ok" {
            latencies.failures.add(1, ordering: .relaxed)
            latencies.refusals.add(status)
        }
        sendNext(&output)
    }

    private func sendNext(_ output: inout LoadOutput) {
        let phase = latencies.phase
        guard phase >= 0 else {
            done = true
            latencies.loopsDone.add(1, ordering: .relaxed)
            return
        }
        number += 1
        sentPhase = phase
        sentAt = monotonicNanoseconds()
        output.send(request(number))
    }

    func closed() {
        guard !done else { return }
        done = true
        latencies.closedEarly.add(1, ordering: .relaxed)
        latencies.loopsDone.add(1, ordering: .relaxed)
    }
}
