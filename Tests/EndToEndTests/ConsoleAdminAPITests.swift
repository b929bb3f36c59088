import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// The console's admin-only views (`/.console/api/namespaces`, `connections`, `load`): what each
/// shows of a running server, and that only the admin sees them.
struct ConsoleAdminAPITests {
    /// `GET target` with `auth=owner` (the admin of a test server), as JSON.
    static func adminGet(_ server: TestServer, _ target: String) async throws -> JSONValue {
        let separator = target.contains("?") ? "&" : "?"
        let response = try await server.http(.GET, target + separator + "auth=owner")
        #expect(response.status == 200, "\(target): \(response.body)")
        return response.json ?? .null
    }

    @Test func theConnectionsViewShowsAClientWithItsListenAndOnDisconnect() async throws {
        try await withTestServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: "test")
            _ = try await client.requestOK(.stats(["sdk.js.10-14-1": 1]))
            _ = try await client.requestOK(.listen(path: "/rooms", query: nil, tag: nil, hash: nil))
            _ = try await client.requestOK(.onDisconnectPut(path: "/presence/ada", data: false))
            _ = try await client.requestOK(.onDisconnectMerge(path: "/presence", data: ["seen": 1]))
            let snapshot = try await Self.adminGet(server, "/.console/api/connections?ns=test")
            let rows = snapshot["connections"]?.arrayValue ?? []
            #expect(snapshot["namespace"] == "test")
            #expect(snapshot["servedHere"] == true)
            try #require(rows.count == 1, "\(snapshot)")
            let row = rows[0]
            #expect(row["id"]?.stringValue == client.hello.sessionID)
            #expect(row["listens"] == 1)
            #expect(row["onDisconnect"] == 2)
            #expect(row["address"] == "127.0.0.1")
            #expect(row["sdk"] == "sdk.js.10-14-1")
            #expect(row["protocolVersion"] == "5")
            #expect(row["auth"] == "unauthenticated")
            #expect(row["bytesWaiting"] == 0)

            // Another namespace's view does not show it; once it closes, it is gone from its own.
            let other = try await Self.adminGet(server, "/.console/api/connections?ns=other")
            #expect(other["connections"]?.arrayValue?.isEmpty == true, "\(other)")
            await client.close()
            #expect(
                await eventually {
                    try await Self.adminGet(server, "/.console/api/connections?ns=test")["connections"]?.arrayValue?
                        .isEmpty == true
                })
        }
    }

    @Test func theConnectionsViewShowsWhoAClientActsAs() async throws {
        try await withTestServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: "test")
            _ = try await client.requestOK(.auth(credential: "owner"))
            // An earlier Canopy Swift SDK named itself in a nested `c`, which the server still reads.
            _ = try await client.requestOK(.stats(["c": ["sdk.swift.canopy": 1]]))
            let rows = try await Self.adminGet(server, "/.console/api/connections?ns=test")["connections"]?.arrayValue
            #expect(rows?.first?["auth"] == "admin", "\(String(describing: rows))")
            #expect(rows?.first?["sdk"] == "sdk.swift.canopy", "\(String(describing: rows))")
            await client.close()
        }
    }

    @Test func theNamespacesViewListsTheOpenAndTheStoredNamespaces() async throws {
        try await withTestServer { server in
            #expect(try await server.http(.PUT, "/a.json?ns=second", body: "1").status == 200)
            let client = try await RealtimeTestClient.connect(to: server, namespace: "third")
            // Answered once its namespace is open (the hello comes before).
            _ = try await client.get("anything")
            let answer = try await Self.adminGet(server, "/.console/api/namespaces")
            let list = answer["namespaces"]?.arrayValue ?? []
            let names = list.compactMap { $0["name"]?.stringValue }
            #expect(names.contains("second") && names.contains("third"), "\(answer)")
            #expect(names.contains(server.configuration.defaultNamespace), "\(answer)")
            #expect(names == names.sorted())
            let second = list.first { $0["name"] == "second" }
            #expect(second?["stored"] == true, "written, so in the data folder: \(answer)")
            let third = list.first { $0["name"] == "third" }
            #expect(third?["open"] == true, "open: \(answer)")
            // Never written: not in the data folder. In PostgreSQL, opening it took it (an owner row),
            // which is what the cluster's list is made of.
            #expect(third?["stored"] == .bool(TestStore.isPostgres), "\(answer)")
            #expect(answer["default"]?.stringValue == server.configuration.defaultNamespace)
            await client.close()
        }
    }

    @Test func theLoadViewCountsWritesEventsAndBytesSent() async throws {
        try await withTestServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: "test")
            _ = try await client.requestOK(.listen(path: "/counter", query: nil, tag: nil, hash: nil))
            let before = try await Self.adminGet(server, "/.console/api/load")
            for value in 1...5 {
                #expect(try await server.http(.PUT, "/counter.json?ns=test", body: "\(value)").status == 200)
            }
            let after = try await Self.adminGet(server, "/.console/api/load")
            func number(_ snapshot: JSONValue, _ path: String...) -> Double {
                var value: JSONValue? = snapshot
                for key in path { value = value?[key] }
                return value?.numberValue ?? -1
            }
            #expect(number(after, "writes") - number(before, "writes") == 5, "\(before) → \(after)")
            #expect(number(after, "events") - number(before, "events") == 5)
            #expect(number(after, "bytesSent") > number(before, "bytesSent"))
            #expect(number(after, "fanOutLatency", "count") - number(before, "fanOutLatency", "count") == 5)
            #expect(number(after, "connections") >= 1)
            #expect(number(after, "listeners") == 1)
            #expect(after["limitTrips"]?["listens_per_connection"] == 0)
            let buckets = after["fanOutLatency"]?["buckets"]?.arrayValue ?? []
            #expect(buckets.last?.arrayValue?.last?.numberValue ?? 0 >= 5, "\(buckets)")
            #expect(number(after, "time") >= number(before, "time"))
            await client.close()
        }
    }

    @Test func theViewsRefuseWithoutTheAdminCredential() async throws {
        try await withTestServer { configuration in
            configuration.authentication.isEmulator = false
            configuration.authentication.adminSecret = SignedTokens.adminSecret
            configuration.authentication.sharedSecret = SignedTokens.secret
        } _: { server in
            let token = try await SignedTokens.token(uid: "ada")
            for view in ["namespaces", "connections", "load"] {
                let target = "/.console/api/\(view)"
                let refused = try await server.http(.GET, target)
                let message = refused.json?["error"]?.stringValue ?? ""
                #expect(refused.status == 401, "\(view): \(refused.body)")
                #expect(message.contains("admin") && message.contains("Authorization: Bearer"), "\(view): \(message)")
                let user = try await server.http(
                    .GET, target, headers: [("Authorization", "Bearer \(token)")])
                #expect(user.status == 401, "a user is not the admin: \(user.body)")
                let wrong = try await server.http(.GET, target, headers: [("Authorization", "Bearer nope")])
                #expect(wrong.status == 401, "\(wrong.body)")
                let admin = try await server.http(
                    .GET, target, headers: [("Authorization", "Bearer \(SignedTokens.adminSecret)")])
                #expect(admin.status == 200, "\(view): \(admin.body)")
                #expect(admin.header("Cache-Control") == "no-store")
            }
        }
    }
}
