import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Writes through the server's REST API: the storm's seed data and its write after each cut.
///
/// Its connection attempts time out after 250 ms and are made again: during a storm the server's
/// accept queue may be full, and waiting out the kernel's SYN retransmission (1 s, then 3 s) would
/// delay the write after the cut, and so every client, by the tool's own doing.
final class RESTWriter: Sendable {
    let server: String
    let namespace: String
    /// Sent as `Authorization: Bearer` with every request.
    let token: String?
    private let client: HTTPClient

    init(server: String, namespace: String, token: String? = nil) {
        self.server = server
        self.namespace = namespace
        self.token = token
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .milliseconds(250)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: LoadTLS.applied(to: configuration))
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// Puts `json` at `path` and waits for a 2xx answer; while the server cannot be reached (it is
    /// restarting) or does not answer, tries again until `deadline` (monotonic nanoseconds).
    /// `through` names another server (host:port) to send it to; redirects are followed. A `401` or
    /// `403` throws ``LoadError/requestRefused(what:server:status:message:)``.
    func put(_ path: String, json: String, until deadline: UInt64, through: String? = nil) async throws {
        let target = through ?? server
        let url = "\(LoadTLS.scheme)://\(target)/\(path).json?ns=\(namespace)&print=silent"
        var request = HTTPClientRequest(url: url)
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        request.body = .bytes(ByteBuffer(string: json))
        while true {
            let remaining = Int64(deadline) - Int64(monotonicNanoseconds())
            do {
                let response = try await client.execute(
                    request, timeout: .nanoseconds(max(remaining, 1_000_000_000)))
                let status = Int(response.status.code)
                guard (200..<300).contains(status) else {
                    let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
                    if status == 401 || status == 403 {
                        throw LoadError.requestRefused(
                            what: "PUT /\(path)", server: target, status: status, message: Self.errorMessage(body))
                    }
                    throw LoadError.httpFailed(url: url, reason: "status \(status): \(body)")
                }
                return
            } catch let error as LoadError {
                throw error
            } catch {
                if Task.isCancelled || monotonicNanoseconds() >= deadline {
                    throw LoadError.cannotConnect(address: target, reason: ConnectFailure.describe(error))
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// The `error` member of the server's JSON error body, else the body.
    static func errorMessage(_ body: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            let message = object["error"] as? String
        else { return body }
        return message
    }

    /// The port of the node serving the namespace, among nodes of one cluster on this host: the one
    /// that answers a shallow read itself rather than redirecting it (a node that does not answer
    /// is skipped).
    func owner(amongPorts ports: [Int]) async throws -> Int {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .milliseconds(250)
        let probe = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let port = try await owner(amongPorts: ports, probe: probe)
            try? await probe.shutdown()
            return port
        } catch {
            try? await probe.shutdown()
            throw error
        }
    }

    private func owner(amongPorts ports: [Int], probe: HTTPClient) async throws -> Int {
        let host = server.split(separator: ":").first.map(String.init) ?? "127.0.0.1"
        var port = ports[0]
        var tried = 0
        while tried < 4 * ports.count {
            tried += 1
            do {
                var request = HTTPClientRequest(url: "http://\(host):\(port)/.json?ns=\(namespace)&shallow=true")
                if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                let response = try await probe.execute(request, timeout: .seconds(10))
                _ = try? await response.body.collect(upTo: 1 << 20)
                if response.status.code == 307,
                    let owner = response.headers.first(name: "Location").flatMap(URLComponents.init(string:))?.port
                {
                    port = owner
                    continue
                }
                if response.status.code == 503 {
                    // Starting, stopping or taking the namespace over: ask the next node.
                    port = ports[(ports.firstIndex(of: port).map { $0 + 1 } ?? 0) % ports.count]
                    try await Task.sleep(for: .milliseconds(50))
                    continue
                }
                guard response.status.code == 200 else {
                    throw LoadError.httpFailed(url: "\(host):\(port)", reason: "status \(response.status.code)")
                }
                return port
            } catch let error as LoadError {
                throw error
            } catch {
                port = ports[(ports.firstIndex(of: port).map { $0 + 1 } ?? 0) % ports.count]
            }
        }
        throw LoadError.check("no node of ports \(ports) says it serves namespace \(namespace)")
    }
}
