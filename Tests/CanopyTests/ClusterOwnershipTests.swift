import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport

@testable import Canopy

/// In a cluster, a namespace is served by one process from its first request on, whatever that
/// request is: a node that does not hold a fresh namespace's lease sends its clients to the one
/// that does, so a listener and a writer that reached different nodes see the same data.
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled, "needs CANOPY_TEST_POSTGRES=1"))
struct ClusterOwnershipTests {
    /// The issue's scenario: two nodes, a namespace nobody used, a listener through node 2 and a
    /// write through node 1. Node 1 used to greet the writer and store the write under a lease of its
    /// own while node 2 served the listener an empty tree of its own.
    @Test(.timeLimit(.minutes(3)))
    func aListenerAndAWriterOnDifferentNodesShareAFreshNamespace() async throws {
        try await withPostgresCluster { cluster in
            let (port1, port2) = (try TestServer.reservePort(), try TestServer.reservePort())
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1", port: port1) }) { node1 in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node2", port: port2) }) { node2 in
                    let listener = makeDatabase(node2, namespace: "fresh1")
                    let writer = makeDatabase(node1, namespace: "fresh1")
                    defer {
                        listener.shutDown()
                        writer.shutDown()
                    }
                    let seen = Recorder<Int>()
                    listener.reference(withPath: "x").observe(.value) { snapshot in
                        if let value = snapshot.value as? Int { seen.record(value) }
                    }
                    // The listen reached node 2, which took the namespace for it.
                    #expect(
                        await eventually(timeout: .seconds(30)) {
                            (try? await cluster.owner(of: "fresh1")) == "node2"
                        })
                    let started = ContinuousClock.now
                    try await writer.reference(withPath: "x").setValue(42)
                    #expect(await seen.wait(timeout: .seconds(30)) { $0.contains(42) }, "the listener saw \(seen.all)")
                    print(
                        "ClusterOwnershipTests: the listener saw the write \(ContinuousClock.now - started) after it was sent"
                    )

                    // Both nodes answer for the namespace with the owner's data: one directly,
                    // the other by its redirect.
                    for node in [node1, node2] {
                        #expect(try await Self.get("/x.json?ns=fresh1", through: node.baseURL) == "42")
                    }
                    // A raw realtime client of node 1 is redirected, not greeted.
                    do {
                        let client = try await RealtimeTestClient.connect(to: node1, namespace: "fresh1")
                        Issue.record("node1 greeted a client of node2's namespace: \(client.hello)")
                        await client.close()
                    } catch RealtimeTestError.noHello(let received, _, _, _) {
                        #expect(received == .reset(host: "127.0.0.1:\(port2)"))
                    }
                    #expect(
                        try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'fresh1'")
                            == "node2 1")
                }
            }
        }
    }

    /// 100 namespaces nobody used, each asked for through three nodes at once (a read, a read and a
    /// realtime connection): each ends with one owner, the other two nodes redirect to it, and a
    /// value written through any node reads back the same through every node.
    @Test(.timeLimit(.minutes(5)))
    func concurrentFirstRequestsThroughThreeNodesEndWithOneOwnerEach() async throws {
        try await withPostgresCluster { cluster in
            let ports = [try TestServer.reservePort(), try TestServer.reservePort(), try TestServer.reservePort()]
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1", port: ports[0]) }) { node1 in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node2", port: ports[1]) }) {
                    node2 in
                    try await withTestServer(configure: { $0.joinCluster(cluster, node: "node3", port: ports[2]) }) {
                        node3 in
                        let nodes = [node1, node2, node3]
                        let names = (0..<100).map { "fresh-\($0)" }
                        // First requests, all at once: for each namespace, two reads and a realtime
                        // connection through the three nodes in turn.
                        let answers = try await withThrowingTaskGroup(of: (String, Int, FirstAnswer).self) { group in
                            for (index, name) in names.enumerated() {
                                for offset in 0..<3 {
                                    let node = (index + offset) % 3
                                    group.addTask {
                                        (
                                            name, node,
                                            try await Self.firstAnswer(
                                                from: nodes[node], namespace: name, realtime: offset == 2)
                                        )
                                    }
                                }
                            }
                            var answers: [String: [Int: FirstAnswer]] = [:]
                            for try await (name, node, answer) in group { answers[name, default: [:]][node] = answer }
                            return answers
                        }
                        let owners = try await Self.owners(in: cluster)
                        for name in names {
                            let owner = try #require(owners[name], "no owner row for \(name)")
                            let ownerIndex = try #require(["node1", "node2", "node3"].firstIndex(of: owner))
                            for (node, answer) in answers[name] ?? [:] {
                                if node == ownerIndex {
                                    #expect(answer == .served, "\(name) through its owner node\(node + 1): \(answer)")
                                } else {
                                    #expect(
                                        answer == .redirected(to: "127.0.0.1:\(ports[ownerIndex])"),
                                        "\(name) through node\(node + 1), owner \(owner): \(answer)")
                                }
                            }
                        }
                        // Written through a node chosen in turn, read through every node.
                        for (index, name) in names.enumerated() {
                            let status = try await Self.put(
                                "/v.json?ns=\(name)", body: "\(index)", through: nodes[index % 3].baseURL)
                            #expect(status == 200, "PUT \(name): \(status)")
                        }
                        for (index, name) in names.enumerated() {
                            for node in nodes {
                                let value = try await Self.get("/v.json?ns=\(name)", through: node.baseURL)
                                #expect(value == "\(index)", "\(name) through \(node.baseURL): \(value)")
                            }
                        }
                        #expect(
                            try await cluster.psql("SELECT count(*) FROM canopy_owner WHERE ns LIKE 'fresh-%'") == "100"
                        )
                    }
                }
            }
        }
    }

    /// Runs `body` with two nodes of one cluster where `namespace`, first owned by `node1`, was taken
    /// over by `node2` while `node1` did not know yet (its lease forced out, `node2` writing `2`
    /// under a higher epoch). `node1` renews every 20 s, so it learns of it from what `body` sends.
    static func withNamespaceTakenOver(
        _ namespace: String,
        _ body: (_ cluster: PostgresTestCluster, _ node1: TestServer, _ node2: TestServer) async throws -> Void
    ) async throws {
        try await withPostgresCluster { cluster in
            let (port1, port2) = (try TestServer.reservePort(), try TestServer.reservePort())
            try await withTestServer(
                configure: { $0.joinCluster(cluster, node: "node1", port: port1, leaseDuration: .seconds(60)) }
            ) {
                node1 in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node2", port: port2) }) { node2 in
                    #expect(try await node1.http(.PUT, "/v.json?ns=\(namespace)", body: "1").status == 200)
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    #expect(try await node2.http(.PUT, "/v.json?ns=\(namespace)", body: "2").status == 200)
                    try await body(cluster, node1, node2)
                }
            }
        }
    }

    /// A node whose namespace was taken over while it did not know yet sends a REST write on to
    /// the new owner instead of answering that the write could not be stored.
    @Test(.timeLimit(.minutes(3)))
    func aWriteToANodeThatLostItsNamespaceIsRedirectedToTheNewOwner() async throws {
        try await Self.withNamespaceTakenOver("moved") { cluster, node1, node2 in
            let answer = try await node1.http(.PUT, "/v.json?ns=moved", body: "3")
            #expect(answer.status == 307, "\(answer.status) \(answer.body)")
            #expect(answer.header("Location") == "http://127.0.0.1:\(node2.port)/v.json?ns=moved")
            // Nothing of it was stored by node1; sent on, it is node2's to store.
            #expect(try await cluster.psql("SELECT value FROM canopy_nodes WHERE ns = 'moved'") == "2")
            #expect(try await Self.put("/v.json?ns=moved", body: "3", through: node1.baseURL) == 200)
            #expect(try await Self.get("/v.json?ns=moved", through: node1.baseURL) == "3")
            #expect(
                try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'moved'") == "node2 2")
        }
    }

    /// Rules set through such a node go to the new owner the same way, instead of answering that
    /// they could not be stored.
    @Test(.timeLimit(.minutes(3)))
    func rulesSetThroughANodeThatLostItsNamespaceAreRedirectedToTheNewOwner() async throws {
        try await Self.withNamespaceTakenOver("ruled") { _, node1, node2 in
            let rules = #"{"rules": {".read": true, ".write": false}}"#
            let answer = try await node1.http(.PUT, "/.settings/rules.json?ns=ruled&auth=owner", body: rules)
            #expect(answer.status == 307, "\(answer.status) \(answer.body)")
            let location = answer.header("Location") ?? "no Location"
            #expect(location.hasPrefix("http://127.0.0.1:\(node2.port)/.settings/rules.json?"), "\(location)")
            let onOwner = try await node2.http(.PUT, "/.settings/rules.json?ns=ruled&auth=owner", body: rules)
            #expect(onOwner.status == 200, "\(onOwner.status) \(onOwner.body)")
            #expect(try await node2.http(.PUT, "/v.json?ns=ruled", body: "3").status == 401)
        }
    }

    /// The same for an SDK client connected to that node: its write is not refused but sent again,
    /// after the node closed the connection, to the new owner, which stores it.
    @Test(.timeLimit(.minutes(3)))
    func anSDKWriteToANodeThatLostItsNamespaceIsStoredByTheNewOwner() async throws {
        try await withPostgresCluster { cluster in
            let (port1, port2) = (try TestServer.reservePort(), try TestServer.reservePort())
            try await withTestServer(
                configure: { $0.joinCluster(cluster, node: "node1", port: port1, leaseDuration: .seconds(60)) }
            ) { node1 in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node2", port: port2) }) { node2 in
                    let client = makeDatabase(node1, namespace: "moved")
                    defer { client.shutDown() }
                    try await client.reference(withPath: "v").setValue(1)
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    #expect(try await node2.http(.PUT, "/v.json?ns=moved", body: "2").status == 200)

                    try await client.reference(withPath: "w").setValue(3)
                    #expect(
                        try await cluster.psql("SELECT value FROM canopy_nodes WHERE ns = 'moved' AND path = 'w'")
                            == "3")
                    #expect(try await Self.get("/.json?ns=moved", through: node1.baseURL) == #"{"v":2,"w":3}"#)
                }
            }
        }
    }

    enum FirstAnswer: Equatable, Sendable {
        case served
        case redirected(to: String)
        case other(String)
    }

    /// How `node` answers a first request for `namespace`: a REST read, or a realtime connection.
    private static func firstAnswer(
        from node: TestServer, namespace: String, realtime: Bool
    ) async throws -> FirstAnswer {
        guard realtime else {
            let answer = try await node.http(.GET, "/v.json?ns=\(namespace)")
            switch answer.status {
            case 200: return .served
            case 307:
                let location = answer.header("Location").flatMap(URLComponents.init(string:))
                return .redirected(to: "\(location?.host ?? "?"):\(location?.port ?? 0)")
            default: return .other("\(answer.status) \(answer.body)")
            }
        }
        do {
            let client = try await RealtimeTestClient.connect(to: node, namespace: namespace)
            await client.close()
            return .served
        } catch RealtimeTestError.noHello(let received, _, _, _) {
            if case .reset(let host) = received { return .redirected(to: host) }
            return .other("\(String(describing: received))")
        }
    }

    private static func owners(in cluster: PostgresTestCluster) async throws -> [String: String] {
        let rows = try await cluster.psql("SELECT ns || ' ' || node FROM canopy_owner")
        var owners: [String: String] = [:]
        for row in rows.split(separator: "\n") {
            let parts = row.split(separator: " ")
            if parts.count == 2 { owners[String(parts[0])] = String(parts[1]) }
        }
        return owners
    }

    /// A REST request through `baseURL`, following one redirect to the namespace's owner.
    private static func request(
        _ method: TestHTTPMethod, _ target: String, body: String?, through baseURL: String
    ) async throws -> TestHTTPResponse {
        let answer = try await TestServer.http(baseURL: baseURL, method, target, body: body)
        guard answer.status == 307, let location = answer.header("Location"),
            let url = URLComponents(string: location), let host = url.host, let port = url.port
        else { return answer }
        let rest = location.dropFirst("http://\(host):\(port)".count)
        return try await TestServer.http(baseURL: "http://\(host):\(port)", method, String(rest), body: body)
    }

    private static func get(_ target: String, through baseURL: String) async throws -> String {
        let answer = try await request(.GET, target, body: nil, through: baseURL)
        return answer.status == 200 ? answer.body : "\(answer.status) \(answer.body)"
    }

    private static func put(_ target: String, body: String, through baseURL: String) async throws -> Int {
        Int(try await request(.PUT, target, body: body, through: baseURL).status)
    }
}
