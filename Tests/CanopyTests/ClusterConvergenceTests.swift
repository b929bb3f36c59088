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
            let executable = try #require(ServerProcess.locateExecutable())
            var nodes: [ServerProcess] = []
            for name in ["node1", "node2", "node3"] {
                let port = try TestServer.reservePort()
                nodes.append(
                    try await ServerProcess.start(
                        executable: executable, dataDirectory: folder + "/" + name,
                        arguments: [
                            "--store", cluster.url, "--node-name", name, "--port", "\(port)", "--advertise-host",
                            "127.0.0.1:\(port)", "--lease-duration", "30",
                        ]))
            }
            // node1 serves the namespace; the clients are configured with node2 and node3.
            var acknowledged: Set<String> = []
            for index in 0..<10 where try await Self.put(index, through: nodes[0]) { acknowledged.insert("w\(index)") }
            let clients = nodes.dropFirst().map {
                Database(url: "\($0.baseURL)?ns=converge", connector: Database.realtimeConnector)
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

            await nodes[0].kill()
            // Written through node2, which takes the namespace over (or sends the write on).
            for index in 10..<30 where try await Self.put(index, through: nodes[1]) {
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
            for node in nodes.dropFirst() { await node.terminate() }
        }
    }

    /// Puts `log/w<index>` through `node`, following a redirect to the owner and trying again for up
    /// to a minute while no node serves the namespace; returns whether a node acknowledged it.
    private static func put(_ index: Int, through node: ServerProcess) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        var base = node.baseURL
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
            base = node.baseURL
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
