import CanopyTesting
import Foundation
import ProcessResources
import Testing
import Transport
import Tree

@testable import CanopyServer

/// What namespaces a client can make the server hold: reads create none, the number open is
/// capped, idle ones are closed, and writes create one only where the operator allows it. Each
/// bound is checked by the descriptors the server (this process) holds in its data folder, so
/// these run on the SQLite store only.
@Suite(.enabled(if: !TestStore.isPostgres, "counts the SQLite files the server holds open"))
struct NamespaceLimitTests {
    private static func databaseFiles(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".sqlite") }
            .sorted()
    }

    /// The files of namespaces the server holds open in `folder`: every open file there but the
    /// data folder's lock, which the server holds as long as it runs.
    private static func namespaceFilesOpen(under folder: String) -> [String] {
        OpenFiles.paths(under: folder).filter { !$0.hasSuffix("/" + ServerConfiguration.dataLockFile) }
    }

    @Test func readsAndListensOfUnknownNamespacesCreateNoFile() async throws {
        try await withTestServer { server in
            let folder = try #require(server.dataDirectory)
            for index in 0..<300 {
                let response = try await server.http(.GET, "/a.json?ns=read\(index)")
                #expect(response.status == 200 && response.body == "null", "\(response.status) \(response.body)")
            }
            let stream = try await server.eventStream("/a.json?ns=streamed")
            #expect(try await stream.nextData().json == ["path": "/", "data": nil])
            let client = try await RealtimeTestClient.connect(to: server, namespace: "listened")
            try await client.requestOK(.listen(path: "/a", query: nil, tag: nil, hash: nil))
            #expect(Self.databaseFiles(in: folder) == [])
            #expect(Self.namespaceFilesOpen(under: folder) == [])

            // The first write creates the namespace, and the listeners opened before it see it.
            #expect(try await server.http(.PUT, "/a.json?ns=streamed", body: "1").status == 200)
            #expect(try await stream.nextData().json == ["path": "/", "data": 1])
            try await client.put("a", "x")
            #expect(Self.databaseFiles(in: folder) == ["listened.sqlite", "streamed.sqlite"])
            await stream.close()
            await client.close()
        }
    }

    @Test func theNamespacesOpenAreCappedAndTheLeastRecentlyUsedMakesRoom() async throws {
        try await withTestServer(configure: { $0.maxOpenNamespaces = 3 }) { server in
            let folder = try #require(server.dataDirectory)
            for index in 0..<8 {
                #expect(try await server.http(.PUT, "/v.json?ns=n\(index)", body: "\(index)").status == 200)
            }
            #expect(Self.databaseFiles(in: folder).count == 8)
            // The database file, its WAL and its shared-memory index, for at most three namespaces.
            let held = Self.namespaceFilesOpen(under: folder)
            #expect(held.count <= 9, "\(held)")
            #expect(server.metric("canopy_namespaces_open") == 3)
            for index in 0..<8 {
                #expect(try await server.http(.GET, "/v.json?ns=n\(index)").body == "\(index)")
            }

            // Three connections hold three namespaces: a fourth cannot open.
            var clients: [RealtimeTestClient] = []
            for index in 0..<3 {
                let client = try await RealtimeTestClient.connect(to: server, namespace: "held\(index)")
                try await client.put("here", true)
                clients.append(client)
            }
            let refused = try await server.http(.GET, "/v.json?ns=n0")
            #expect(refused.status == 503)
            #expect(refused.json == ["error": "Too many namespaces in use (at most 3); try again later"])
            #expect((server.metric(#"canopy_limit_trips_total{limit="namespaces"}"#) ?? 0) >= 1)

            // When one connection leaves (its lease goes once its onDisconnect writes ran), its
            // namespace makes room.
            await clients.removeFirst().close()
            var reopened = try await server.http(.GET, "/v.json?ns=n0")
            let deadline = ContinuousClock.now + .seconds(15)
            while reopened.status == 503, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                reopened = try await server.http(.GET, "/v.json?ns=n0")
            }
            #expect(reopened.status == 200 && reopened.body == "0")
            #expect(Self.namespaceFilesOpen(under: folder).filter { $0.contains("/held0.sqlite") }.isEmpty)
            for client in clients { await client.close() }
        }
    }

    @Test func idleNamespacesAreClosedAndOpenAgainOnUse() async throws {
        try await withTestServer(configure: { $0.namespaceIdleTimeout = .milliseconds(200) }) { server in
            let folder = try #require(server.dataDirectory)
            #expect(try await server.http(.PUT, "/v.json?ns=idle", body: "7").status == 200)
            #expect(await eventually { Self.namespaceFilesOpen(under: folder).isEmpty })
            #expect(server.metric("canopy_namespaces_open") == 0)
            #expect(try await server.http(.GET, "/v.json?ns=idle").body == "7")

            // A connection keeps its namespace open however long it stays, listening or not.
            let client = try await RealtimeTestClient.connect(to: server, namespace: "idle")
            try await client.put("w", 8)
            try await Task.sleep(for: .seconds(1))
            #expect(!Self.namespaceFilesOpen(under: folder).isEmpty)
            try await client.put("w", 9)
            await client.close()
            #expect(await eventually { Self.namespaceFilesOpen(under: folder).isEmpty })
            #expect(try await server.http(.GET, "/w.json?ns=idle").body == "9")
        }
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.0.1.1", true), ("::1", true), ("localhost", true), ("0.0.0.0", false),
        ("10.1.2.3", false), ("::", false), ("example.com", false),
    ])
    func writesCreateNamespacesByDefaultOnlyOnLoopback(host: String, creates: Bool) {
        var configuration = ServerConfiguration()
        configuration.host = host
        #expect(configuration.createsNamespacesOnWrite == creates)
        configuration.createsNamespaces = true
        #expect(configuration.createsNamespacesOnWrite)
        configuration.createsNamespaces = false
        #expect(!configuration.createsNamespacesOnWrite)
    }

    @Test func withoutCreationOnlyTheDefaultNamespaceAndExistingOnesAreWritable() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withTestServer(dataDirectory: folder) { server in
            let created = try await server.http(.PUT, "/v.json?ns=early", body: "1")
            #expect(created.status == 200)
        }
        try await withTestServer(dataDirectory: folder, configure: { $0.createsNamespaces = false }) { server in
            let refused = try await server.http(.PUT, "/v.json?ns=fresh", body: "1")
            #expect(refused.status == 404)
            #expect(refused.json == ["error": "Namespace \"fresh\" does not exist"])
            #expect(try await server.http(.GET, "/v.json?ns=fresh").status == 404)
            #expect((server.metric(#"canopy_limit_trips_total{limit="namespace_creation"}"#) ?? 0) >= 2)
            #expect(try await server.http(.PUT, "/v.json?ns=early", body: "2").status == 200)
            #expect(try await server.http(.PUT, "/v.json", body: "3").status == 200)
            #expect(Self.databaseFiles(in: folder) == ["default.sqlite", "early.sqlite"])
        }
    }

    @Test func noNamespaceOpensOnceTheServerIsStopping() async throws {
        try await withTestServer { server in
            #expect(try await server.http(.PUT, "/v.json?ns=open", body: "1").status == 200)
            await server.server.databases.stopOpening()
            let refused = try await server.http(.GET, "/v.json?ns=other")
            #expect(refused.status == 503)
            #expect(refused.json == ["error": "The server is shutting down"])
            #expect(try await server.http(.GET, "/v.json?ns=open").body == "1")
        }
    }
}
