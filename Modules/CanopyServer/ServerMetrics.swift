public import Prometheus
import Synchronization

/// The server's Prometheus metrics, served at `/metrics`.
///
/// Gauges one event changes together (an event stream's listener and its connection) change in
/// ``together(_:)``, and the exposition is read in the same lock: no reading shows half an event.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let connections: Gauge
    let listeners: Gauge
    let writes: Counter
    let eventsFannedOut: Counter
    let commitLatency: DurationHistogram
    let commitBatchWrites: ValueHistogram
    let restRequests: Counter
    let resentWrites: Counter
    let namespacesOpen: Gauge
    let bytesSent: Counter
    let fanOutLatency: DurationHistogram
    private let limitTrips: [ServerLimit: Counter]
    private let step = Mutex(())

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "canopy", metricName: metric, unitName: unit, helpText: help)
        }
        connections = registry.makeGauge(
            descriptor: name("connections", "open", "Open realtime connections and event streams"))
        listeners = registry.makeGauge(descriptor: name("listeners", "active", "Active listens"))
        writes = registry.makeCounter(
            descriptor: name("writes", "total", "Writes applied (each path of an update counts)"))
        eventsFannedOut = registry.makeCounter(
            descriptor: name("events_fanned_out", "total", "Updates pushed to listeners"))
        restRequests = registry.makeCounter(descriptor: name("rest_requests", "total", "REST requests answered"))
        resentWrites = registry.makeCounter(
            descriptor: name("resent_writes", "total", "Resent writes answered as before instead of applied again"))
        namespacesOpen = registry.makeGauge(
            descriptor: name("namespaces", "open", "Namespaces open (read, listened to or written recently)"))
        bytesSent = registry.makeCounter(
            descriptor: name("realtime_sent", "bytes", "Bytes written to realtime connections (WebSocket frames)"))
        fanOutLatency = registry.makeDurationHistogram(
            descriptor: name(
                "fanout_latency", "seconds",
                "Time from a write applied to its events handed to the connections (the commit included)"),
            buckets: [
                .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
            ])
        let trips = name("limit_trips", "total", "Requests refused or connections closed because a limit was reached")
        limitTrips = Dictionary(
            uniqueKeysWithValues: ServerLimit.allCases.map {
                ($0, registry.makeCounter(descriptor: trips, labels: [("limit", $0.rawValue)]))
            })
        commitLatency = registry.makeDurationHistogram(
            descriptor: name("commit_latency", "seconds", "Time from a write being applied to its batch being durable"),
            buckets: [
                .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10),
                .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1),
            ])
        commitBatchWrites = registry.makeValueHistogram(
            descriptor: name("commit_batch", "writes", "Writes per committed transaction (group commit)"),
            buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384])
    }

    /// Counts one refusal or closure because of `limit` (`canopy_limit_trips_total{limit="…"}`).
    func tripped(_ limit: ServerLimit) {
        limitTrips[limit]?.increment()
    }

    /// Runs `changes` (to several metrics, for one event) so that no ``exposition()`` sees part
    /// of them. They must not call ``together(_:)`` or ``exposition()``.
    func together<Result: Sendable>(_ changes: () -> Result) -> Result {
        step.withLock { _ in changes() }
    }

    /// The metrics in the Prometheus text format.
    public func exposition() -> String {
        var buffer: [UInt8] = []
        step.withLock { _ in registry.emit(into: &buffer) }
        return String(decoding: buffer, as: UTF8.self)
    }
}
