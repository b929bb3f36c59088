import Auth
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

@testable import CanopyServer

/// canopy-server with `--store postgres://…` against a private PostgreSQL: what a client writes is
/// acknowledged once PostgreSQL holds it and reads back after a restart, a namespace is served by
/// one process at a time, and a store that cannot be used stops the server at start.
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled)) struct PostgresServerTests {
    @Test func aProcessThatDoesNotServeANamespaceSendsItsClientsToTheOneThatDoes() async throws {
        try await withPostgresCluster { cluster in
            let (portA, portB) = (try TestServer.reservePort(), try TestServer.reservePort())
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-a", port: portA) }) { first in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-b", port: portB) }) {
                    second in
                    #expect(try await first.http(.PUT, "/v.json?ns=shared", body: "1").status == 200)
                    // The owner's hello names it.
                    let direct = try await RealtimeTestClient.connect(to: first, namespace: "shared")
                    #expect(direct.hello.host == "127.0.0.1:\(portA)")
                    await direct.close()

                    // REST: 307 to the same path on the owner, the namespace in the query.
                    for (method, target, body) in [
                        (TestHTTPMethod.GET, "/v.json?ns=shared&print=pretty", nil),
                        (.PUT, "/v.json?ns=shared", "2"),
                    ] {
                        let answer = try await second.http(method, target, body: body)
                        #expect(answer.status == 307, "\(method) \(target): \(answer.status) \(answer.body)")
                        let location = answer.header("Location") ?? ""
                        #expect(location.hasPrefix("http://127.0.0.1:\(portA)/v.json?"), "\(location)")
                        #expect(location.contains("ns=shared"), "\(location)")
                    }
                    // A path and query kept as sent, byte for byte, even what a URL parser refuses.
                    let odd = try await second.exchangeRaw(
                        "GET /a%22b%zz|{}.json?ns=shared&orderBy=%22$key%22&ns=shared HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            + "Connection: close\r\n\r\n")
                    #expect(
                        odd.text.contains(
                            "\r\nLocation: http://127.0.0.1:\(portA)/a%22b%zz|{}.json?orderBy=%22$key%22&ns=shared\r\n"),
                        "\(odd.text)")
                    let byHost = try await second.http(.GET, "/v.json", headers: [("Host", "shared.canopy.local")])
                    #expect(byHost.header("Location") == "http://127.0.0.1:\(portA)/v.json?ns=shared")

                    // Realtime: the protocol's redirect instead of a hello.
                    do {
                        let client = try await RealtimeTestClient.connect(to: second, namespace: "shared")
                        Issue.record("node-b greeted a client of node-a's namespace: \(client.hello)")
                        await client.close()
                    } catch RealtimeTestError.noHello(let received, _, _, _) {
                        #expect(received == .reset(host: "127.0.0.1:\(portA)"))
                    }
                    // node-b serves the namespaces it owns, with its own hello.
                    let own = try await RealtimeTestClient.connect(to: second, namespace: "other")
                    #expect(own.hello.host == "127.0.0.1:\(portB)")
                    try await own.put("w", 1)
                    await own.close()
                }
            }
        }
    }

    /// A request that carries an `Authorization` header, which clients drop when they follow a
    /// redirect to another host, is passed on to the owner and answered as the owner answers it,
    /// event streams included; `--rest-forwarding` makes every request redirected, or proxied.
    @Test func aRequestWithCredentialsIsPassedOnToTheOwnerInsteadOfRedirected() async throws {
        try await withPostgresCluster { cluster in
            let ports = (try TestServer.reservePort(), try TestServer.reservePort(), try TestServer.reservePort())
            func configure(
                _ node: String, port: Int, forwarding: RESTForwarding
            ) -> (inout ServerConfiguration) -> Void {
                { configuration in
                    configuration.joinCluster(cluster, node: node, port: port)
                    configuration.authentication.adminSecret = SignedTokens.adminSecret
                    configuration.restForwarding = forwarding
                }
            }
            let admin = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]
            try await withTestServer(configure: configure("node-a", port: ports.0, forwarding: .auto)) { owner in
                try await withTestServer(configure: configure("node-b", port: ports.1, forwarding: .auto)) { auto in
                    try await withTestServer(configure: configure("node-c", port: ports.2, forwarding: .redirect)) {
                        redirecting in
                        let rules = #"{"rules": {".read": "auth != null", ".write": "auth != null"}}"#
                        #expect(
                            try await owner.http(.PUT, "/.settings/rules.json?ns=shared", headers: admin, body: rules)
                                .status == 200)
                        #expect(
                            try await owner.http(.PUT, "/v.json?ns=shared", headers: admin, body: "1").status == 200)

                        // Through node-b: the owner's answers, the credential with them.
                        let read = try await auto.http(.GET, "/v.json?ns=shared", headers: admin)
                        #expect(read.status == 200 && read.body == "1", "\(read.status) \(read.body)")
                        let document = try await auto.http(.GET, "/.settings/rules.json?ns=shared", headers: admin)
                        #expect(document.status == 200 && document.body.contains("auth != null"), "\(document.body)")
                        let write = try await auto.http(
                            .PUT, "/v.json?ns=shared&print=silent", headers: admin, body: "2")
                        #expect(write.status == 204, "\(write.status) \(write.body)")
                        #expect(try await owner.http(.GET, "/v.json?ns=shared", headers: admin).body == "2")
                        let refused = try await auto.http(
                            .GET, "/v.json?ns=shared", headers: [("Authorization", "Bearer wrong")])
                        #expect(refused.status == 401, "the owner's own refusal: \(refused.status) \(refused.body)")

                        // An event stream through node-b stays open and carries the owner's events.
                        let stream = try await auto.eventStream("/v.json?ns=shared", headers: admin)
                        #expect(stream.status == 200)
                        #expect(try await stream.next().json == ["path": "/", "data": 2])
                        #expect(
                            try await owner.http(.PUT, "/v.json?ns=shared", headers: admin, body: "3").status == 200)
                        #expect(try await stream.nextData().json == ["path": "/", "data": 3])
                        await stream.close()
                        // The owner's listener goes with the client: the proxy ends its upstream
                        // request when the client leaves, not at the next keep-alive (30 s away).
                        #expect(await owner.waitForMetric("canopy_listeners_active", toBe: 0))

                        // More streams through node-b than an HTTP client's default pool (8
                        // connections to a host) at once, and a plain request besides.
                        let streamRequest =
                            "GET /v.json?ns=shared HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                            + "Authorization: Bearer \(SignedTokens.adminSecret)\r\n\r\n"
                        let held = try (0..<12).map { _ in try StalledClient(port: auto.port, request: streamRequest) }
                        #expect(await owner.waitForMetric("canopy_listeners_active", toBe: 12))
                        #expect(try await auto.http(.GET, "/v.json?ns=shared", headers: admin).body == "3")
                        for client in held { client.close() }
                        #expect(await owner.waitForMetric("canopy_listeners_active", toBe: 0))

                        // Without credentials, and everything on node-c: redirected.
                        #expect(try await auto.http(.GET, "/v.json?ns=shared").status == 307)
                        let redirected = try await redirecting.http(.GET, "/v.json?ns=shared", headers: admin)
                        #expect(redirected.status == 307, "\(redirected.status) \(redirected.body)")

                        // A request another process passed on is not passed on again.
                        let again = try await auto.http(
                            .GET, "/v.json?ns=shared", headers: admin + [("Canopy-Forwarded-By", "node-x")])
                        #expect(again.status == 503, "\(again.status) \(again.body)")
                    }
                }
            }
        }
    }

    @Test func acknowledgedWritesAreInPostgreSQLAndReadBackAfterARestart() async throws {
        try await withPostgresCluster { cluster in
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1") }) { server in
                let client = try await RealtimeTestClient.connect(to: server, namespace: "kept")
                try await client.put("users/ada", ["name": "Ada", "age": 36])
                try await client.requestOK(.merge(path: "users", data: ["bob": ["name": "Bob"], "ada/age": 37]))
                try await client.put("users/ada/.priority", 5)
                // Acknowledged means committed: PostgreSQL holds every row now. Bob's record is one
                // packed row; Ada's was until a write went inside it.
                #expect(
                    try await cluster.psql(
                        "SELECT string_agg(path || '=' || value, ' ' ORDER BY path) FROM canopy_nodes")
                        == #"users/ada/.priority=5 users/ada/age=37 users/ada/name="Ada" users/bob={"name":"Bob"}"#)
                let rules = try await server.http(
                    .PUT, "/.settings/rules.json?ns=kept", headers: [("Authorization", "Bearer owner")],
                    body: #"{"rules": {".read": true, ".write": true}}"#)
                #expect(rules.status == 200)
                await client.close()
            }
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1") }) { server in
                let export = try await server.http(.GET, "/users.json?ns=kept&format=export")
                #expect(
                    export.json == [
                        "ada": [".priority": 5, "age": 37, "name": "Ada"], "bob": ["name": "Bob"],
                    ])
                let rules = try await server.http(
                    .GET, "/.settings/rules.json?ns=kept", headers: [("Authorization", "Bearer owner")])
                #expect(rules.json == ["rules": [".read": true, ".write": true]])
            }
            // Each start took the namespace again, under a higher epoch.
            #expect(
                try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'kept'") == "node1 2")
        }
    }

    /// A server that stopped has let its node lock go: a process started next under its node name
    /// (a restart) is not told that another runs under it.
    @Test func aStoppedServerHasReleasedItsNodeLock() async throws {
        try await withPostgresCluster { cluster in
            let held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(0x43_4E_50)"
            for _ in 0..<3 {
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node1") }) {
                    (server: TestServer) async throws in
                    #expect(try await server.http(.PUT, "/a.json?ns=restarts", body: "1").status == 200)
                    #expect(try await cluster.psql(held) == "1")
                }
                #expect(try await cluster.psql(held) == "0", "the node lock outlived the server")
            }
        }
    }

    @Test func aNamespaceIsServedByOneProcessAtATime() async throws {
        try await withPostgresCluster { cluster in
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-b") }) { second in
                // A test server is stopped by cancellation, which skips releasing the lease: a short
                // one runs out soon after.
                try await withTestServer(configure: {
                    $0.joinCluster(cluster, node: "node-a", leaseDuration: .seconds(1))
                }) {
                    first in
                    #expect(try await first.http(.PUT, "/v.json?ns=shared", body: "1").status == 200)
                    let refused = try await second.http(.GET, "/v.json?ns=shared")
                    #expect(refused.status == 503)
                    #expect(refused.json == ["error": #"Namespace "shared" is served by node-a"#])
                    // A realtime client is refused too (until redirects come, by an error and a close).
                    let client = try await RealtimeTestClient.connect(to: second, namespace: "shared")
                    await #expect(throws: (any Error).self) {
                        try await client.request(.listen(path: "/v", query: nil, tag: nil, hash: nil))
                    }
                    await client.close()
                }
                // node-a stopped; once its lease ran out node-b serves the namespace.
                var served = try await second.http(.GET, "/v.json?ns=shared")
                let deadline = ContinuousClock.now + .seconds(15)
                while served.status == 503, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    served = try await second.http(.GET, "/v.json?ns=shared")
                }
                #expect(served.status == 200 && served.body == "1", "status \(served.status): \(served.body)")
            }
        }
    }

    @Test func aServerWhoseNamespaceWasTakenOverStepsDownAndSendsItsClientsAway() async throws {
        try await withPostgresCluster { cluster in
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-b") }) { second in
                try await withTestServer(configure: {
                    $0.joinCluster(cluster, node: "node-a", leaseDuration: .seconds(3))
                }) {
                    first in
                    let client = try await RealtimeTestClient.connect(to: first, namespace: "moved")
                    try await client.put("v", 1)
                    try await client.listen("v")
                    // node-a is taken for dead (its lease forced out); node-b takes the namespace.
                    try await cluster.psql("UPDATE canopy_owner SET lease_until = now() - interval '1 second'")
                    #expect(try await second.http(.PUT, "/v.json?ns=moved", body: "2").status == 200)
                    // node-a's next renewal is fenced: it stops serving and its clients go.
                    #expect(await client.waitUntilClosed(timeout: .seconds(20)), "node-a kept its client")
                    let refused = try await first.http(.PUT, "/v.json?ns=moved", body: "3")
                    #expect(refused.status == 503)
                    #expect(refused.json == ["error": #"Namespace "moved" is served by node-b"#])
                    #expect(try await cluster.psql("SELECT value FROM canopy_nodes WHERE ns = 'moved'") == "2")
                    #expect(
                        try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'moved'")
                            == "node-b 2")
                    await client.close()
                }
            }
        }
    }

    @Test func aStoreThatCannotBeUsedStopsTheServerAtStart() async throws {
        var configuration = TestServer.defaultConfiguration(dataDirectory: nil)
        configuration.postgresURL = "postgres://canopy@localhost:1/canopy?host=/nonexistent"
        await #expect {
            _ = try await TestServer.start(configuration: configuration)
        } throws: { error in
            guard case .store(let problem)? = error as? StartupError else { return false }
            return problem.hasPrefix(
                "cannot reach PostgreSQL at \"postgres://canopy@localhost:1/canopy?host=/nonexistent\"")
        }
        configuration.postgresURL = "mysql://canopy@db/canopy"
        await #expect(throws: StartupError.self) { _ = try await TestServer.start(configuration: configuration) }
    }
}
