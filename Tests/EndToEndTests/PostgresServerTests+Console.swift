import CanopyTesting
import Foundation
import Testing
import Tree

/// The console's admin views in a cluster: which node owns a namespace, and the namespaces of the
/// whole cluster (in `PostgresServerTests`, which runs one cluster at a time).
extension PostgresServerTests {
    @Test func theConsoleViewsShowTheOwnerOfANamespaceAndTheClustersNamespaces() async throws {
        try await withPostgresCluster { cluster in
            let (portA, portB) = (try TestServer.reservePort(), try TestServer.reservePort())
            try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-a", port: portA) }) { first in
                try await withTestServer(configure: { $0.joinCluster(cluster, node: "node-b", port: portB) }) {
                    second in
                    #expect(try await first.http(.PUT, "/v.json?ns=shared", body: "1").status == 200)
                    let client = try await RealtimeTestClient.connect(to: first, namespace: "shared")

                    let onOwner = try await first.http(.GET, "/.console/api/connections?ns=shared&auth=owner").json
                    #expect(onOwner?["node"] == "node-a", "\(String(describing: onOwner))")
                    #expect(onOwner?["servedHere"] == true)
                    #expect(onOwner?["owner"]?["node"] == "node-a")
                    #expect(onOwner?["owner"]?["host"] == .string("127.0.0.1:\(portA)"))
                    #expect((onOwner?["owner"]?["epoch"]?.numberValue ?? 0) >= 1)
                    #expect(onOwner?["connections"]?.arrayValue?.count == 1)

                    let elsewhere = try await second.http(.GET, "/.console/api/connections?ns=shared&auth=owner").json
                    #expect(elsewhere?["node"] == "node-b", "\(String(describing: elsewhere))")
                    #expect(elsewhere?["servedHere"] == false)
                    #expect(elsewhere?["servedBy"]?["node"] == "node-a")
                    #expect(elsewhere?["owner"]?["node"] == "node-a")
                    #expect(elsewhere?["connections"]?.arrayValue?.isEmpty == true)

                    let listed = try await second.http(.GET, "/.console/api/namespaces?auth=owner").json
                    let shared = listed?["namespaces"]?.arrayValue?.first { $0["name"] == "shared" }
                    #expect(shared?["stored"] == true && shared?["open"] == false, "\(String(describing: listed))")
                    #expect(shared?["owner"]?["node"] == "node-a")
                    await client.close()
                }
            }
        }
    }
}
