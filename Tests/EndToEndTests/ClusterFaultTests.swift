import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// Several real `canopy-server` processes over one private PostgreSQL, with faults: the owner of
/// a namespace killed under write load, paused past its lease, and PostgreSQL itself crashing.
/// After each, every acknowledged write is in PostgreSQL, and a process that lost a namespace
/// acknowledges nothing more for it.
// One cluster at a time: starting several at once on a 2-core machine starves the other suites.
@Suite(
    .serialized,
    .enabled(
        if: PostgresTestCluster.isEnabled && serverExecutable != nil, "needs CANOPY_TEST_POSTGRES=1 and the binary")
)
struct ClusterFaultTests {
    @Test(.timeLimit(.minutes(5)))
    func theOwnerKilledUnderWriteLoadIsReplacedAtOnceAndNoAcknowledgedWriteIsLost() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            // Leases of 30 s: a takeover before one runs out is the node lock's doing.
            let nodes = try await ClusterNodes.start(store: cluster, leaseSeconds: 30, folder: folder)
            let writer = NumberedWriter(rest: ClusterRESTClient(nodes: nodes.baseURLs), namespace: "fault")
            do {
                try await Self.killTheOwner(of: cluster, nodes: nodes, writer: writer)
            } catch {
                await writer.stop()
                await nodes.stop()
                throw error
            }
            await nodes.stop()
        }
    }

    private static func killTheOwner(
        of cluster: PostgresTestCluster, nodes: ClusterNodes, writer: NumberedWriter
    ) async throws {
        writer.start()
        try await waitUntil("30 writes") { writer.count >= 30 }
        #expect(try await cluster.owner(of: "fault") == "node1", "the first node written to serves the namespace")
        let leaseEnd = try await cluster.psql("SELECT lease_until FROM canopy_owner WHERE ns = 'fault'")

        let before = writer.count
        let killed = ContinuousClock.now
        await nodes.kill("node1")
        try await waitUntil("a write after the kill") { writer.count > before }
        let takeover = ContinuousClock.now - killed
        #expect(
            try await cluster.psql("SELECT now() < timestamptz '\(leaseEnd)'") == "t",
            "taken over only after node1's lease ran out (\(takeover))")
        try await waitUntil("30 writes after the kill") { writer.count >= before + 30 }
        await writer.stop()
        print("cluster fault: owner killed with SIGKILL; first acknowledged write on the new owner after \(takeover)")

        let stored = try await cluster.storedTree(of: "fault")
        let lost = writer.acknowledged.filter { stored["log"]?[String($0.key.dropFirst("log/".count))] != $0.value }
        #expect(lost.isEmpty, "acknowledged but not in PostgreSQL: \(lost.keys.sorted())")
        let successor = try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'fault'")
        #expect(successor == "node2 2" || successor == "node3 2", "\(successor)")
    }

    @Test(.timeLimit(.minutes(5)))
    func anOwnerPausedPastItsLeaseAcknowledgesNothingAfterItResumes() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let first = try await ServerProcess.startClusterNode(
                "node1", store: cluster, leaseSeconds: 2, folder: folder)
            let second = try await ServerProcess.startClusterNode(
                "node2", store: cluster, leaseSeconds: 2, folder: folder)
            let client = try await RealtimeTestClient.connect(url: first.webSocketURL(namespace: "paused"))
            try await client.put("before", 1)

            await first.pause()
            // A write the paused owner receives but cannot answer yet.
            let late = Task { try await client.request(.put(path: "late", data: 1, hash: nil), timeout: .seconds(60)) }
            try await Task.sleep(for: .seconds(4))
            // Its lease ran out: node2 takes the namespace (node1's node lock is still held, so only
            // the lease lets it).
            let taken = try await TestServer.http(baseURL: second.baseURL, .PUT, "/after.json?ns=paused", body: "2")
            #expect(taken.status == 200, "\(taken.status) \(taken.body)")
            first.resume()

            switch await late.result {
            case .success(let answer):
                #expect(
                    !answer.isOK,
                    "the resumed node acknowledged a write: \(answer)\nnode1:\n\(first.log.suffix(4000))\nnode2:\n\(second.log.suffix(4000))"
                )
            case .failure:
                break  // the connection ended unanswered: also not acknowledged
            }
            #expect(
                try await cluster.psql("SELECT count(*) FROM canopy_nodes WHERE ns = 'paused' AND path = 'late'") == "0"
            )
            #expect(
                try await cluster.psql(
                    "SELECT string_agg(path, ',' ORDER BY path) FROM canopy_nodes WHERE ns = 'paused'")
                    == "after,before")
            #expect(
                try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'paused'") == "node2 2"
            )
            // node1 sends its clients on: a new one is redirected to node2.
            let redirected = try await TestServer.http(baseURL: first.baseURL, .GET, "/after.json?ns=paused")
            #expect(redirected.status == 307)
            #expect(redirected.header("Location")?.hasPrefix(second.baseURL) == true)
            await client.close()
            await first.terminate()
            await second.terminate()
        }
    }

    /// The onDisconnect operations of connections whose process was killed are stored in
    /// PostgreSQL before they are acknowledged, and the process that takes the namespace over runs
    /// them once, before it serves anything; a connection that closed ran and removed its own.
    @Test(.timeLimit(.minutes(5)))
    func aKilledOwnersOnDisconnectOperationsRunOnceOnTheNextOwner() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let first = try await ServerProcess.startClusterNode(
                "node1", store: cluster, leaseSeconds: 30, folder: folder)
            let ada = try await RealtimeTestClient.connect(url: first.webSocketURL(namespace: "presence"))
            try await ada.put("users/ada", "online")
            try await ada.requestOK(.onDisconnectPut(path: "users/ada", data: "offline"))
            try await ada.requestOK(
                .onDisconnectMerge(path: "counters", data: ["disconnects": [".sv": ["increment": 1]]]))
            // Cancelled before the crash: nothing of it runs.
            try await ada.requestOK(.onDisconnectPut(path: "users/ada/last", data: "never"))
            try await ada.requestOK(.onDisconnectCancel(path: "users/ada/last"))
            let bob = try await RealtimeTestClient.connect(url: first.webSocketURL(namespace: "presence"))
            try await bob.requestOK(.onDisconnectPut(path: "users/bob", data: "offline"))
            #expect(try await cluster.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = 'presence'") == "2")
            // Bob leaves normally: his operation runs and its record goes in the same transaction.
            await bob.close()
            var remaining = ""
            for _ in 0..<600 {
                remaining = try await cluster.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = 'presence'")
                if remaining == "1" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(remaining == "1")
            #expect(try await ada.get("users/bob") == "offline")

            await first.kill()
            let second = try await ServerProcess.startClusterNode(
                "node2", store: cluster, leaseSeconds: 30, folder: folder)
            // The first request opens the namespace on node2, which runs Ada's operations first.
            let read = try await TestServer.http(baseURL: second.baseURL, .GET, "/.json?ns=presence")
            #expect(read.status == 200, "\(read.body)")
            #expect(read.json?["users"]?["ada"] == "offline", "\(read.body)")
            #expect(read.json?["counters"]?["disconnects"] == 1, "\(read.body)")
            #expect(try await cluster.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = 'presence'") == "0")

            // Ada comes back on node2, naming her old session, and is online again.
            let back = try await RealtimeTestClient.connect(
                url: second.webSocketURL(namespace: "presence", lastSession: ada.hello.sessionID))
            try await back.put("users/ada", "online again")

            // Ran once, and the old session clobbers nothing: a third owner after node2 dies finds
            // nothing left to run.
            await second.kill()
            let third = try await ServerProcess.startClusterNode(
                "node3", store: cluster, leaseSeconds: 30, folder: folder)
            let again = try await TestServer.http(baseURL: third.baseURL, .GET, "/.json?ns=presence")
            #expect(again.json?["counters"] == ["disconnects": 1], "\(again.body)")
            #expect(again.json?["users"]?["ada"] == "online again", "\(again.body)")
            await back.close()
            await ada.close()
            await third.terminate()
        }
    }

    /// A partition: the owner, in a network namespace of its own, loses PostgreSQL and its
    /// clients at once (its link goes down). It stops serving before its lease ends; the next
    /// owner takes the namespace once the lease ran out, runs the cut-off client's onDisconnect
    /// operations once, and the old owner acknowledges nothing after the link comes back.
    @Test(.timeLimit(.minutes(5)), .enabled(if: NetworkNamespace.isAvailable, "needs root and iproute2"))
    func anOwnerCutFromPostgreSQLAndItsClientsIsReplacedOnceItsLeaseRanOut() async throws {
        try await withPostgresCluster { cluster in
            let network = try await NetworkNamespace.create()
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            do {
                try await Self.partition(cluster, network, folder: folder)
            } catch {
                await network.remove()
                throw error
            }
            await network.remove()
        }
    }

    private static func partition(
        _ cluster: PostgresTestCluster, _ network: NetworkNamespace, folder: String
    )
        async throws
    {
        try await cluster.listen(on: network.hostAddress)
        let first = try await ServerProcess.startClusterNode(
            "node1", store: cluster, leaseSeconds: 2, folder: folder, network: network)
        let second = try await ServerProcess.startClusterNode("node2", store: cluster, leaseSeconds: 2, folder: folder)
        let client = try await RealtimeTestClient.connect(url: first.webSocketURL(namespace: "cut"))
        try await client.put("before", 1)
        try await client.requestOK(
            .onDisconnectMerge(path: "counters", data: ["cut": [".sv": ["increment": 1]]]))

        try await network.cut()
        let cut = ContinuousClock.now
        // Sent into the cut: node1 must never acknowledge it.
        let late = Task { try await client.request(.put(path: "late", data: 1, hash: nil), timeout: .seconds(60)) }
        var taken = false
        while !taken, ContinuousClock.now - cut < .seconds(60) {
            let put = try? await TestServer.http(
                baseURL: second.baseURL, .PUT, "/after.json?ns=cut", body: "2", timeout: .seconds(5))
            taken = put?.status == 200
            if !taken { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(taken, "node2 never took the namespace")
        print("cluster fault: owner cut off; the next owner acknowledged a write after \(ContinuousClock.now - cut)")
        // The cut-off client's operations ran on node2, once.
        let counters = try await TestServer.http(baseURL: second.baseURL, .GET, "/counters.json?ns=cut")
        #expect(counters.json == ["cut": 1], "\(counters.body)")

        try await network.heal()
        switch await late.result {
        case .success(let answer):
            #expect(!answer.isOK, "the cut-off node acknowledged a write: \(answer)\n\(first.log.suffix(4000))")
        case .failure:
            break  // the connection ended unanswered: also not acknowledged
        }
        #expect(first.log.contains("stepped down from a namespace"), "\(first.log.suffix(4000))")
        #expect(try await cluster.psql("SELECT count(*) FROM canopy_nodes WHERE ns = 'cut' AND path = 'late'") == "0")
        #expect(try await cluster.psql("SELECT node || ' ' || epoch FROM canopy_owner WHERE ns = 'cut'") == "node2 2")
        #expect(try await cluster.psql("SELECT count(*) FROM canopy_disconnect WHERE ns = 'cut'") == "0")
        // Back on the network, node1 sends clients on to node2.
        let redirected = try await TestServer.http(baseURL: first.baseURL, .GET, "/before.json?ns=cut")
        #expect(redirected.status == 307)
        #expect(redirected.header("Location")?.hasPrefix(second.baseURL) == true)
        await client.close()
        await first.terminate()
        await second.terminate()
    }

    @Test(.timeLimit(.minutes(5)))
    func writesFailClearlyWhilePostgreSQLIsDownAndWorkAgainWhenItIsBack() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let node = try await ServerProcess.startClusterNode(
                "node1", store: cluster, leaseSeconds: 5, folder: folder)
            let put = { (path: String, body: String) in
                try await TestServer.http(baseURL: node.baseURL, .PUT, path, body: body, timeout: .seconds(60))
            }
            #expect(try await put("/kept.json?ns=crash", "1").status == 200)

            await cluster.stopServer(immediately: true)
            let refused = try await put("/lost.json?ns=crash", "2")
            #expect(refused.status >= 500, "\(refused.status) \(refused.body)")
            #expect(refused.json?["error"]?.stringValue?.isEmpty == false, "\(refused.body)")
            try await cluster.startServer()

            // The server recovers by itself: the namespace opens again and writes are acknowledged.
            var again = try await put("/again.json?ns=crash", "3")
            let deadline = ContinuousClock.now + .seconds(60)
            while again.status != 200, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                again = try await put("/again.json?ns=crash", "3")
            }
            #expect(again.status == 200, "\(again.status) \(again.body)")
            #expect(
                try await cluster.psql(
                    "SELECT string_agg(path, ',' ORDER BY path) FROM canopy_nodes WHERE ns = 'crash'")
                    == "again,kept")
            await node.terminate()
        }
    }
}
