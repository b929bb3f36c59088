import Foundation
import Histogram
import ProcessResources
import Synchronization

/// One fan-out run's shape, the same for Canopy and for the Redis baseline: `listeners` receivers of
/// one topic, one publisher writing `rate` times a second for `duration` seconds, each message
/// carrying its send time (and `padding` bytes more).
struct FanoutPlan: Sendable {
    let listeners: Int
    let rate: Int
    let duration: Double
    let padding: Int
    /// How long to wait for the last events after the last write before giving up on them.
    let drainTimeout: Double

    var writes: Int { Int(Double(rate) * duration) }

    /// The text of a message sent at `sentAt` (monotonic nanoseconds): `sent:<ns>`, then padding.
    func message(sentAt: UInt64) -> String {
        padding == 0 ? "sent:" + String(sentAt) : "sent:" + String(sentAt) + " " + paddingText
    }

    private var paddingText: String { String(repeating: "x", count: max(0, padding - 1)) }
}

/// Counts and latencies of one fan-out run, shared by its listener sessions.
final class FanoutTally: Sendable {
    let events = Atomic<Int>(0)
    /// Listeners whose listen or subscription was answered.
    let ready = Atomic<Int>(0)
    /// Listeners done: all their events received, or closed early.
    let done = Atomic<Int>(0)
    let closedEarly = Atomic<Int>(0)
    /// Listens answered with a status other than `ok` (none on the Redis side).
    let listenRefusals = Refusals()
    /// When the last listener got its last event (monotonic nanoseconds).
    let lastDone = Atomic<UInt64>(0)
    let latencies = LoopHistograms()

    func listenerDone(at time: UInt64) {
        var seen = lastDone.load(ordering: .relaxed)
        while seen < time {
            let (exchanged, original) = lastDone.compareExchange(
                expected: seen, desired: time, ordering: .relaxed)
            if exchanged { break }
            seen = original
        }
        done.add(1, ordering: .relaxed)
    }
}

/// What a listener session does with each event, on either side: records the time from its send to
/// now and counts it, until `expected` events.
struct EventRecorder {
    let expected: Int
    let tally: FanoutTally
    private(set) var count = 0

    init(expected: Int, tally: FanoutTally) {
        self.expected = expected
        self.tally = tally
    }

    /// Records the event whose text carries `sent:<ns>`; ignores texts without it.
    mutating func record(_ text: String) {
        guard count < expected, let sent = MessageText.integer(after: "sent:", in: text) else { return }
        let now = monotonicNanoseconds()
        tally.latencies.record(now &- sent)
        count += 1
        tally.events.add(1, ordering: .relaxed)
        if count == expected { tally.listenerDone(at: now) }
    }

    /// The connection closed: a listener short of its events is done, and counted as cut short.
    mutating func closed() {
        guard count < expected else { return }
        count = expected
        tally.closedEarly.add(1, ordering: .relaxed)
        tally.listenerDone(at: monotonicNanoseconds())
    }
}

/// The figures of one fan-out run.
struct FanoutResult: Encodable {
    var target: String
    var listeners: Int
    var rate: Int
    var writes: Int
    var expectedEvents: Int
    var events: Int
    var seconds: Double
    var eventsPerSecond: Double
    var latency: LatencyFigures
    var listenersClosedEarly: Int
    /// CPU time of the server process during the run, when the tool knows its pid.
    var serverCPUSeconds: Double?
    var serverCPUMicrosecondsPerEvent: Double?
    var loadGeneratorCPUSeconds: Double

    func describe() -> [String] {
        var lines = [
            String(
                format: "%@: events received %d (expected %d) in %.2f s = %.0f events/s", target, events,
                expectedEvents, seconds, eventsPerSecond),
            "\(target): write-to-event latency " + latency.describe(),
        ]
        if listenersClosedEarly > 0 { lines.append("\(target): \(listenersClosedEarly) listener(s) closed early") }
        if let serverCPUSeconds, let serverCPUMicrosecondsPerEvent {
            lines.append(
                String(
                    format: "%@: server CPU %.2f s = %.2f µs per event; load generator CPU %.2f s", target,
                    serverCPUSeconds, serverCPUMicrosecondsPerEvent, loadGeneratorCPUSeconds))
        } else {
            lines.append(String(format: "%@: load generator CPU %.2f s", target, loadGeneratorCPUSeconds))
        }
        return lines
    }
}

/// Latency percentiles in milliseconds.
struct LatencyFigures: Encodable {
    var p50Ms: Double
    var p90Ms: Double
    var p99Ms: Double
    var maxMs: Double
    var count: UInt64

    init(_ histogram: Histogram<UInt64>) {
        p50Ms = Double(histogram.valueAtPercentile(50)) / 1e6
        p90Ms = Double(histogram.valueAtPercentile(90)) / 1e6
        p99Ms = Double(histogram.valueAtPercentile(99)) / 1e6
        maxMs = Double(histogram.max) / 1e6
        count = histogram.totalCount
    }

    func describe() -> String {
        String(format: "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms", p50Ms, p90Ms, p99Ms, maxMs)
    }
}

/// The part of a fan-out run both sides share: wait for every listener, publish at the rate, wait
/// for the events, and add up the figures.
enum FanoutDriver {
    /// Runs `plan` once listeners are connected; `publish(number, text)` sends one message.
    /// `failure()` says, when it is not `nil`, why the run cannot measure anything (the server
    /// refused the listens or the writes): checked while waiting for the listeners, before each
    /// write and while waiting for the events, so that the run ends at once.
    static func run(
        _ plan: FanoutPlan, target: String, tally: FanoutTally, console: Console,
        serverCPU: @escaping @Sendable () -> Double?, failure: @escaping @Sendable () -> LoadError? = { nil },
        publish: (Int, String) -> Void
    ) async throws -> FanoutResult {
        let listeners = plan.listeners
        try await console.withProgress({
            "\(target): \(tally.ready.load(ordering: .relaxed)) of \(listeners) listeners ready"
        }) {
            while tally.ready.load(ordering: .relaxed) < listeners {
                if let failure = failure() { throw failure }
                let lost = tally.closedEarly.load(ordering: .relaxed)
                if lost > 0 { throw LoadError.listenersLost(lost) }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        console.line("\(target): all \(listeners) listeners ready; writing \(plan.rate)/s for \(plan.duration) s")
        let cpuBefore = serverCPU()
        let ownBefore = ProcessCPU.ownSeconds()
        let started = monotonicNanoseconds()
        let interval = 1e9 / Double(plan.rate)
        let expected = plan.writes * listeners
        let status: @Sendable () -> String = {
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            let events = tally.events.load(ordering: .relaxed)
            return String(
                format: "%@: %.1f s, %d of %d events (%.0f/s), %d listeners done", target, seconds, events,
                expected, Double(events) / max(seconds, 1e-3), tally.done.load(ordering: .relaxed))
        }
        try await console.withProgress(status) {
            for number in 0..<plan.writes {
                if let failure = failure() { throw failure }
                // Every listener is gone (closed early): nothing left to measure.
                if tally.done.load(ordering: .relaxed) == listeners { break }
                let due = started + UInt64(Double(number) * interval)
                let now = monotonicNanoseconds()
                if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
                publish(number + 1, plan.message(sentAt: monotonicNanoseconds()))
            }
            let drainDeadline = monotonicNanoseconds() + UInt64(plan.drainTimeout * 1e9)
            while tally.done.load(ordering: .relaxed) < listeners, monotonicNanoseconds() < drainDeadline {
                if let failure = failure() { throw failure }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let allDone = tally.done.load(ordering: .relaxed) == listeners
        let ended = allDone ? tally.lastDone.load(ordering: .relaxed) : monotonicNanoseconds()
        let seconds = Double(ended - started) / 1e9
        let events = tally.events.load(ordering: .relaxed)
        let serverCPUSeconds = both(cpuBefore, serverCPU()).map { $1 - $0 }
        if events == 0 {
            throw LoadError.check(
                "\(target): no event arrived within \(plan.drainTimeout) s of the last of \(plan.writes) writes")
        }
        if !allDone {
            console.line(
                "\(target): warning: \(listeners - tally.done.load(ordering: .relaxed)) listener(s) still short of "
                    + "their events \(plan.drainTimeout) s after the last write")
        }
        return FanoutResult(
            target: target, listeners: listeners, rate: plan.rate, writes: plan.writes, expectedEvents: expected,
            events: events, seconds: seconds, eventsPerSecond: Double(events) / seconds,
            latency: LatencyFigures(try await tally.latencies.merged()),
            listenersClosedEarly: tally.closedEarly.load(ordering: .relaxed), serverCPUSeconds: serverCPUSeconds,
            serverCPUMicrosecondsPerEvent: serverCPUSeconds.map { events > 0 ? $0 / Double(events) * 1e6 : 0 },
            loadGeneratorCPUSeconds: ProcessCPU.ownSeconds() - ownBefore)
    }
}

private func both(_ first: Double?, _ second: Double?) -> (Double, Double)? {
    guard let first, let second else { return nil }
    return (first, second)
}
