import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresStore
import Presence
import Rules
import Tree

/// The console's admin-only views, under `/.console/api/`: the namespaces
/// (``ConsoleAdminAPI/namespacesPath``), the connections of a namespace and its owner in a cluster
/// (``ConsoleAdminAPI/connectionsPath``), and the server's counters (``ConsoleAdminAPI/loadPath``).
///
/// Each answer is a snapshot taken when asked; nothing is kept for it between requests. They need
/// the admin credential, checked as REST checks it (``RESTController/caller(of:rest:)``, with the
/// same refusal of a page of another origin); without it they answer `401` saying what to send.
struct ConsoleAdminAPI: Sendable {
    static let namespacesPath = "/.console/api/namespaces"
    static let connectionsPath = "/.console/api/connections"
    static let loadPath = "/.console/api/load"

    let databases: DatabaseRegistry
    let sessions: SessionRegistry
    let metrics: ServerMetrics
    /// Whose credential check the views use.
    let rest: RESTController
    /// This process's node name in a cluster (``ServerConfiguration/nodeName``).
    let nodeName: String?

    /// The answer to a request for one of the views; `nil` for every other request.
    func respond(to request: Request) async -> Response? {
        let path = request.uri.path
        guard [Self.namespacesPath, Self.connectionsPath, Self.loadPath].contains(path) else { return nil }
        guard request.method == .get || request.method == .head else {
            return RESTResponse.methodNotAllowed(request.method, allowed: "GET, HEAD, OPTIONS")
        }
        // The credential parameters (`auth`, `access_token`) and `ns` are read as REST reads them.
        let parameters: RESTRequest
        do {
            parameters = try RESTRequest(path: "/.json", query: request.uri.query)
        } catch {
            return RESTResponse.error(.badRequest, "Invalid query")
        }
        switch await rest.caller(of: request, rest: parameters) {
        case .failure(let refusal):
            return refusal.response
        case .success((let caller, _)) where !caller.isAdmin:
            return RESTResponse.error(
                .unauthorized,
                "The console's \(path.split(separator: "/").last ?? "") view is the admin's only: send the admin "
                    + "credential (the server's --admin-secret) as 'Authorization: Bearer <secret>'")
        case .success:
            break
        }
        let answer: JSONValue
        switch path {
        case Self.namespacesPath:
            answer = await namespaces()
        case Self.connectionsPath:
            let namespace = parameters.namespace(host: request.head.authority, default: rest.defaultNamespace)
            switch await connections(of: namespace) {
            case .snapshot(let snapshot): answer = snapshot
            case .refused(let refusal): return refusal
            }
        default:
            answer = Self.load(from: metrics.exposition())
        }
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        return RESTResponse.json(answer, status: .ok, headers: headers, rest: parameters)
    }

    // MARK: Namespaces

    /// `{"default": name, "namespaces": [{"name", "open", "stored", "owner"?}]}`, by name: the
    /// default namespace, those open in this process and those the store holds.
    private func namespaces() async -> JSONValue {
        let open = Set(await databases.openNames)
        var stored: [String: NamespaceOwner?] = [:]
        var problem: String?
        do {
            stored = try await databases.storedNamespaces()
        } catch {
            problem = error.reason
        }
        var list: [JSONValue] = []
        for name in open.union(stored.keys).union([rest.defaultNamespace]).sorted() {
            var entry: [String: JSONValue] = [
                "name": .string(name), "open": .bool(open.contains(name)), "stored": .bool(stored[name] != nil),
            ]
            if let owner = stored[name] ?? nil { entry["owner"] = Self.json(owner) }
            list.append(.object(entry))
        }
        var answer: [String: JSONValue] = ["default": .string(rest.defaultNamespace), "namespaces": .array(list)]
        if let problem { answer["error"] = .string("The store's namespaces could not be listed: \(problem)") }
        return .object(answer)
    }

    private static func json(_ owner: NamespaceOwner) -> JSONValue {
        [
            "node": .string(owner.node), "host": owner.host.map { .string($0) } ?? .null,
            "epoch": .number(Double(owner.epoch)),
        ]
    }

    // MARK: Connections

    /// The realtime connections of `namespace` in this process, and its owner in a cluster; a
    /// namespace another process serves is answered with that owner and no connections.
    private func connections(of namespace: String) async -> ConnectionsAnswer {
        var answer: [String: JSONValue] = [
            "namespace": .string(namespace), "node": nodeName.map { .string($0) } ?? .null,
        ]
        do {
            answer["owner"] = try await databases.owner(of: namespace).map(Self.json) ?? .null
        } catch {
            answer["ownerError"] = .string(error.reason)
        }
        let lease: DatabaseLease
        do {
            lease = try await databases.lease(namespace)
        } catch .servedElsewhere(_, let node, let host) {
            answer["servedHere"] = false
            answer["servedBy"] = ["node": .string(node), "host": host.map { .string($0) } ?? .null]
            answer["connections"] = []
            return .snapshot(.object(answer))
        } catch .invalidName(let name) {
            return .refused(RESTResponse.error(.badRequest, "Invalid namespace \"\(name)\""))
        } catch .unknown(let name) {
            return .refused(RESTResponse.error(.notFound, "Namespace \"\(name)\" does not exist"))
        } catch {
            return .refused(RESTResponse.error(.serviceUnavailable, "Namespace \"\(namespace)\" is not open: \(error)"))
        }
        defer { lease.release() }
        let database = lease.database
        let live = sessions.sessions(on: database)
        let listens = await database.listenCounts(of: live.map(\.subscriberID))
        var rows: [JSONValue] = []
        for session in live.sorted(by: { $0.id < $1.id }) {
            rows.append(await Self.row(session, listens: listens[session.subscriberID] ?? 0))
        }
        answer["servedHere"] = true
        answer["connections"] = .array(rows)
        return .snapshot(.object(answer))
    }

    private enum ConnectionsAnswer {
        case snapshot(JSONValue)
        case refused(Response)
    }

    /// One connection's row: who it acts as, where from, what it said of itself, and what it holds.
    private static func row(_ session: RealtimeSession, listens: Int) async -> JSONValue {
        let client = session.client
        let operations = session.presence.operations
        let waiting = await session.connection.waiting()
        var row: [String: JSONValue] = [
            "id": .string(session.id),
            "address": .string(client.address),
            "listens": .number(Double(listens)),
            "onDisconnect": .number(Double(operations.operations.count)),
            "onDisconnectBytes": .number(Double(operations.byteCount)),
            "queuedMessages": .number(Double(waiting.messages)),
            "bytesWaiting": .number(Double(waiting.bytes)),
        ]
        switch session.caller {
        case .admin: row["auth"] = "admin"
        case .user(nil): row["auth"] = "unauthenticated"
        case .user(let auth?):
            row["auth"] = "user"
            row["uid"] = auth.variable.json()["uid"] ?? .null
        }
        if let sdk = session.sdk { row["sdk"] = .string(sdk) }
        if let version = client.protocolVersion { row["protocolVersion"] = .string(version) }
        if let agent = client.userAgent { row["userAgent"] = .string(agent) }
        if let origin = client.pageOrigin { row["origin"] = .string(origin) }
        return .object(row)
    }

    // MARK: Load

    /// The server's counters and gauges as one JSON object, read from its Prometheus exposition
    /// (one consistent reading): `{"connections", "listeners", "namespaces", "writes", "events",
    /// "restRequests", "bytesSent", "limitTrips": {limit: count}, "fanOutLatency": {"buckets":
    /// [[upper bound in seconds, cumulative count]], "count", "sum"}, "time"}`; the page samples it
    /// and turns the totals into rates.
    static func load(from exposition: String, now: Date = Date()) -> JSONValue {
        var answer: [String: JSONValue] = ["time": .number((now.timeIntervalSince1970 * 1000).rounded())]
        var trips: [String: JSONValue] = [:]
        var buckets: [(Double, Double)] = []
        let names: [String: String] = [
            "canopy_connections_open": "connections", "canopy_listeners_active": "listeners",
            "canopy_namespaces_open": "namespaces", "canopy_writes_total": "writes",
            "canopy_events_fanned_out_total": "events", "canopy_rest_requests_total": "restRequests",
            "canopy_realtime_sent_bytes": "bytesSent", "canopy_fanout_latency_seconds_count": "fanOutCount",
            "canopy_fanout_latency_seconds_sum": "fanOutSum",
        ]
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            let series = line[..<space]
            let name = series.prefix { $0 != "{" }
            let labels = series.dropFirst(name.count)
            switch name {
            case "canopy_limit_trips_total":
                if let limit = label("limit", in: labels) { trips[limit] = .number(value) }
            case "canopy_fanout_latency_seconds_bucket":
                if let bound = label("le", in: labels) { buckets.append((Double(bound) ?? .infinity, value)) }
            default:
                if let key = names[String(name)] { answer[key] = .number(value) }
            }
        }
        answer["limitTrips"] = .object(trips)
        let finite = buckets.filter { $0.0.isFinite }.sorted { $0.0 < $1.0 }
        answer["fanOutLatency"] = [
            "buckets": .array(finite.map { [.number($0.0), .number($0.1)] }),
            "count": answer.removeValue(forKey: "fanOutCount") ?? 0,
            "sum": answer.removeValue(forKey: "fanOutSum") ?? 0,
        ]
        return .object(answer)
    }

    /// The value of label `name` in `{a="1",b="2"}`.
    private static func label(_ name: String, in labels: Substring) -> String? {
        guard let start = labels.range(of: name + "=\"") else { return nil }
        let rest = labels[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
