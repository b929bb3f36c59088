import Foundation
import Synchronization

/// A REST client of a cluster that follows redirects to the owner and moves to another node when
/// one does not answer, as a load balancer in front of the nodes would.
///
/// ```swift
/// let client = ClusterRESTClient(nodes: nodes.map(\.baseURL))
/// let acknowledged = try await client.put("/log/w1.json?ns=demo", body: "1")
/// ```
public final class ClusterRESTClient: Sendable {
    private let nodes: [String]
    private let timeout: Duration
    private let current = Mutex(0)

    /// A client of the nodes at `nodes` (base URLs, `http://HOST:PORT`), giving up on a node that
    /// has not answered a request within `timeout` (the request goes to the next one).
    public init(nodes: [String], timeout: Duration = .seconds(10)) {
        self.nodes = nodes
        self.timeout = timeout
    }

    /// PUTs `body` at `target`; `true` once a node acknowledged it (200), `false` when a node
    /// refused it with an error (the write may or may not have been applied).
    public func put(_ target: String, body: String) async throws -> Bool {
        var base = nodes[current.withLock { $0 }]
        for _ in 0..<50 {
            try Task.checkCancellation()
            let answer: TestHTTPResponse
            do {
                answer = try await TestServer.http(baseURL: base, .PUT, target, body: body, timeout: timeout)
            } catch {
                // The node is gone: the next one.
                let next = current.withLock { index in
                    index = (index + 1) % nodes.count
                    return index
                }
                base = nodes[next]
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            if answer.status == 307, let location = answer.header("Location"), let url = URL(string: location),
                let host = url.host, let port = url.port
            {
                base = "http://\(host):\(port)"
                if let index = nodes.firstIndex(of: base) { current.withLock { $0 = index } }
                continue
            }
            if answer.status == 200 { return true }
            try await Task.sleep(for: .milliseconds(50))
            if answer.status == 503 { continue }
            return false
        }
        return false
    }
}
