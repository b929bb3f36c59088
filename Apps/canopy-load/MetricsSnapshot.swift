import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// One reading of a server's `/metrics` (Prometheus text format): every sample by its name and
/// labels as written, e.g. `canopy_limit_trips_total{limit="pending_outbound_bytes"}`.
struct MetricsSnapshot: Sendable {
    var samples: [String: Double]

    static func read(from server: String) async throws -> MetricsSnapshot {
        let url = "\(LoadTLS.scheme)://\(server)/metrics"
        let response: HTTPClientResponse
        do {
            response = try await LoadTLS.httpClient.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        } catch {
            throw LoadError.httpFailed(url: url, reason: ConnectFailure.describe(error))
        }
        guard response.status.code == 200 else {
            throw LoadError.httpFailed(url: url, reason: "status \(response.status.code)")
        }
        return MetricsSnapshot(text: String(buffer: try await response.body.collect(upTo: 1 << 24)))
    }

    init(text: String) {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        self.samples = samples
    }

    /// The sample named `name` (with its labels, if any, as the server writes them).
    func value(_ name: String) -> Double? { samples[name] }

    /// `canopy_limit_trips_total{limit="<limit>"}`: refusals or closures because of `limit`.
    func limitTrips(_ limit: String) -> Int { Int(value(#"canopy_limit_trips_total{limit=""# + limit + #""}"#) ?? 0) }

    /// `canopy_connections_open`: realtime connections and event streams.
    var connectionsOpen: Int? { value("canopy_connections_open").map { Int($0) } }

    /// `canopy_listeners_active`: the listens of every connection and event stream.
    var listenersActive: Int? { value("canopy_listeners_active").map { Int($0) } }
}
