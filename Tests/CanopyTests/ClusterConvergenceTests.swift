import CanopyTesting
import Foundation
import Testing

@testable import Canopy

/// Swift SDK clients on a cluster of real processes over PostgreSQL: configured with different
/// nodes, they reach the namespace's owner through its redirect; when the owner is killed they
/// come back through the node each was configured with (the owner they remembered is gone) and
/// converge on exactly what was acknowledged.
@Suite(
    .serialized,
    .enabled(
        if: PostgresTestCluster.isEnabled && ServerProcess.locateExecutable() != nil,
        "needs CANOPY_TEST_POSTGRES=1 and the binary"))
struct ClusterConvergenceTests {
    @Test(.timeLimit(.minutes(5)))
    func sdkClientsConvergeOnEveryAcknowledgedWriteAfterTheOwnerIsKilled() async throws {
        try await withPostgresCluster { cluster in
            let folder = try TestServer.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let nodes = try await ClusterNodes.start(store: cluster, leaseSeconds: 30, folder: folder)
            do {
                try await Self.converge(nodes)
            } catch {
                await nodes.stop()
                throw error
            }
            await nodes.stop()
        }
    }

    private static func converge(_ nodes: ClusterNodes) async throws {
        // node1 serves the namespace; the clients are configured with node2 and node3.
        var acknowledged: Set<String> = []
        for index in 0..<10 where try await Self.put(index, through: nodes.baseURLs[0]) {
            acknowledged.insert("w\(index)")
        }
        let clients = [1, 2].map {
            Database(url: nodes.databaseURL(of: $0, namespace: "converge"), connector: Database.realtimeConnector)
        }
        let seen = clients.map { _ in Recorder<Set<String>>() }
        for (client, recorder) in zip(clients, seen) {
            client.reference(withPath: "log").observe(.value) { snapshot in
                recorder.record(Set((snapshot.value as? [String: Any])?.keys.map { $0 } ?? []))
            }
        }
        let before = acknowledged
        for (index, recorder) in seen.enumerated() {
            #expect(
                await recorder.wait(timeout: .seconds(60)) { $0.last == before },
                "client \(index) saw \(recorder.all.last ?? [])")
        }

        await nodes.kill("node1")
        // Written through node2, which takes the namespace over (or sends the write on).
        for index in 10..<30 where try await Self.put(index, through: nodes.baseURLs[1]) {
            acknowledged.insert("w\(index)")
        }
        #expect(acknowledged.count == 30)
        let after = acknowledged
        for (index, recorder) in seen.enumerated() {
            #expect(
                await recorder.wait(timeout: .seconds(90)) { $0.last == after },
                "client \(index) saw \(recorder.all.last ?? [])")
        }
        for client in clients { client.shutDown() }
    }

    /// Puts `log/w<index>` through the node at `node` (its base URL), following a redirect to the owner and trying again for up
    /// to a minute while no node serves the namespace; returns whether a node acknowledged it.
    private static func put(_ index: Int, through node: String) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        var base = node
        while ContinuousClock.now < deadline {
            let response = try? await TestServer.http(
                baseURL: base, .PUT, "/log/w\(index).json?ns=converge", body: "\(index)", timeout: .seconds(10))
            if response?.status == 200 { return true }
            if response?.status == 307, let location = response?.header("Location"),
                let port = URLComponents(string: location)?.port
            {
                base = "http://127.0.0.1:\(port)"
                continue
            }
            base = node
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
