import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// The admin's rules tools, as the console's Rules view uses them: the simulator
/// (`POST /.settings/rules/simulate.json`) and the log of refused requests
/// (`GET /.settings/rules/refusals.json`), on a server with ``SecurityRulesTests/rules``.
struct RulesToolsTests {
    static let adminHeader = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]

    static func simulate(_ server: TestServer, _ body: JSONValue) async throws -> TestHTTPResponse {
        try await server.http(.POST, "/.settings/rules/simulate.json", headers: adminHeader, body: body.serialized())
    }

    static func refusals(_ server: TestServer, after: Int = 0) async throws -> JSONValue {
        let answer = try await server.http(.GET, "/.settings/rules/refusals.json?after=\(after)", headers: adminHeader)
        #expect(answer.status == 200, "\(answer.body)")
        return try #require(answer.json)
    }

    @Test func theToolsRefuseEveryoneButTheAdminAsTheRulesDocumentDoes() async throws {
        try await SecurityRulesTests.withSecuredServer { server in
            let ada = try await SignedTokens.token(uid: "ada")
            let body = #"{"path": "/users/ada", "operation": "read"}"#
            let document = try await server.http(.GET, "/.settings/rules.json")
            #expect(document.status == 401 && document.json == ["error": "Permission denied"])
            for headers in [[], [("Authorization", "Bearer \(ada)")]] {
                let simulate = try await server.http(
                    .POST, "/.settings/rules/simulate.json", headers: headers, body: body)
                #expect(simulate.status == 401 && simulate.body == document.body)
                let refusals = try await server.http(.GET, "/.settings/rules/refusals.json", headers: headers)
                #expect(refusals.status == 401 && refusals.body == document.body)
            }
            let wrong = try await server.http(.GET, "/.settings/rules/refusals.json?auth=wrong")
            #expect(wrong.status == 401 && wrong.json?["error"] != nil)

            let simulate = try await server.http(
                .POST, "/.settings/rules/simulate.json?auth=\(SignedTokens.adminSecret)", body: body)
            #expect(simulate.status == 200 && simulate.json?["allowed"] == false)
            let log = try await server.http(.GET, "/.settings/rules/refusals.json?auth=\(SignedTokens.adminSecret)")
            #expect(log.status == 200 && log.json?["cursor"] == 0 && log.json?["refusals"] == [])

            let get = try await server.http(.GET, "/.settings/rules/simulate.json", headers: Self.adminHeader)
            #expect(get.status == 405 && get.header("Allow") == "POST, OPTIONS")
            let other = try await server.http(.GET, "/.settings/rules/other.json", headers: Self.adminHeader)
            #expect(other.status == 400)
        }
    }

    @Test func theSimulatorGivesTheVerdictAndTheRuleThatDecided() async throws {
        try await SecurityRulesTests.withSecuredServer { server in
            try await SecurityRulesTests.admin(server, .PUT, "/users/ada.json", #"{"name": "Ada", "age": 36}"#)
            let ada: JSONValue = ["uid": "ada", "provider": "custom"]

            let read = try await Self.simulate(server, ["path": "/users/ada", "operation": "read", "auth": ada])
            #expect(read.status == 200)
            #expect(read.json?["allowed"] == true && read.json?["rules"] == "saved" && read.json?["enforced"] == true)
            #expect(
                read.json?["rule"]
                    == [
                        "kind": ".read", "location": "/users/$uid", "path": "/users/ada",
                        "expression": "auth != null && auth.uid == $uid",
                        "text": "/users/$uid/.read at /users/ada: auth != null && auth.uid == $uid",
                    ])

            // Unauthenticated: both `.read` rules on the way were tried, and each was false.
            let anonymous = try #require(
                try await Self.simulate(server, ["path": "/users/ada", "operation": "read"]).json)
            #expect(anonymous["allowed"] == false && anonymous["rule"] == nil)
            let denial = try #require(anonymous["denial"])
            #expect(denial["reason"] == "notGranted" && denial["kind"] == ".read" && denial["path"] == "/users/ada")
            #expect(
                denial["tried"]?.arrayValue?.compactMap { $0["rule"]?["location"]?.stringValue } == [
                    "/users", "/users/$uid",
                ])
            #expect(denial["tried"]?.arrayValue?.allSatisfy { $0["error"] == .null } == true)

            // A `.validate` refuses the data; an update is checked member by member.
            let negative = try #require(
                try await Self.simulate(
                    server, ["path": "/users/ada/age", "operation": "set", "data": -1, "auth": ada]
                ).json)
            #expect(negative["allowed"] == false && negative["denial"]?["reason"] == "invalidData")
            #expect(negative["denial"]?["failure"]?["rule"]?["location"] == "/users/$uid/age")
            let update = try await Self.simulate(
                server, ["path": "/users/ada", "operation": "update", "data": ["age": 37, "name": "A"], "auth": ada])
            #expect(update.json?["allowed"] == true && update.json?["rule"]?["kind"] == ".write")
            let notAnObject = try await Self.simulate(
                server, ["path": "/users/ada", "operation": "update", "data": 1, "auth": ada])
            #expect(notAnObject.status == 400)
            #expect(notAnObject.json == ["error": "an update must be an object of paths and values"])

            // A read's query, as REST's parameters: `posts` is readable for one's own posts only.
            let ownPosts: JSONValue = ["orderBy": "\"owner\"", "equalTo": "\"ada\""]
            let query = try await Self.simulate(
                server, ["path": "/posts", "operation": "read", "auth": ada, "query": ownPosts])
            #expect(query.json?["allowed"] == true)
            let noQuery = try await Self.simulate(server, ["path": "/posts", "operation": "read", "auth": ada])
            #expect(noQuery.json?["allowed"] == false)

            // The draft in the editor, not saved: evaluated, and the rules in force stay.
            let open = #"{"rules": {".read": true}}"#
            let draft = try await Self.simulate(
                server, ["path": "/users/ada", "operation": "read", "rules": .string(open)])
            #expect(draft.json?["allowed"] == true && draft.json?["rules"] == "draft")
            #expect(draft.json?["rule"]?["location"] == "/")
            let broken = try await Self.simulate(
                server, ["path": "/", "operation": "read", "rules": #"{"rules": {".read": tru}}"#])
            #expect(broken.status == 400)
            #expect(broken.json?["error"]?.stringValue?.hasPrefix("Line 1, column ") == true, "\(broken.body)")

            for body: JSONValue in [
                ["path": "/a", "operation": "delete"], ["path": "/a/.b", "operation": "read"],
                ["path": "/a", "operation": "read", "auth": "ada"], "read",
            ] {
                let refused = try await Self.simulate(server, body)
                #expect(refused.status == 400 && refused.json?["error"] != nil, "\(body)")
            }

            // Simulating writes nothing and logs nothing.
            let data = try await server.http(.GET, "/users/ada.json", headers: Self.adminHeader)
            #expect(data.json == ["name": "Ada", "age": 36])
            #expect(try await Self.refusals(server)["cursor"] == 0)
            #expect(try await Self.simulate(server, ["path": "/", "operation": "read"]).json?["allowed"] == false)
        }
    }

    @Test func refusedRequestsAreLoggedNewestFirstWithTheRulesTried() async throws {
        try await SecurityRulesTests.withSecuredServer { server in
            let (ada, bob) = (try await SignedTokens.token(uid: "ada"), try await SignedTokens.token(uid: "bob"))
            #expect(try await server.http(.PUT, "/users/ada/name.json?auth=\(bob)", body: #""Bob""#).status == 401)
            #expect(try await server.http(.PUT, "/users/ada/name.json?auth=\(ada)", body: #""Ada""#).status == 200)
            let stream = try await server.http(
                .GET, "/users/ada.json", headers: [("Accept", "text/event-stream"), ("Authorization", "Bearer \(bob)")])
            #expect(stream.status == 401)

            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            try await client.requestOK(.auth(credential: ada))
            #expect(
                try await client.request(.listen(path: "/users/bob", query: nil, tag: nil, hash: nil)).status
                    == .permissionDenied)
            #expect(try await client.request(.get(path: "/users/bob", query: nil)).status == .permissionDenied)
            #expect(
                try await client.request(.merge(path: "/users/ada", data: ["age": -1])).status == .permissionDenied)
            #expect(
                try await client.request(.onDisconnectPut(path: "/users/bob/online", data: false)).status
                    == .permissionDenied)
            try await client.put("/users/ada/age", 36)

            let log = try await Self.refusals(server)
            #expect(log["cursor"] == 6 && log["capacity"] == 1000)
            let entries = try #require(log["refusals"]?.arrayValue)
            #expect(entries.map { $0["sequence"] } == [6, 5, 4, 3, 2, 1])
            #expect(
                entries.map { $0["operation"] } == ["onDisconnect set", "update", "read", "listen", "listen", "set"])
            #expect(
                entries.map { $0["transport"] } == ["realtime", "realtime", "realtime", "realtime", "rest", "rest"])
            #expect(entries.map { $0["uid"] } == ["ada", "ada", "ada", "ada", "bob", "bob"])
            #expect(
                entries.map { $0["path"] }
                    == ["/users/bob/online", "/users/ada", "/users/bob", "/users/bob", "/users/ada", "/users/ada/name"])
            let first = try #require(entries.last)
            let summary =
                "no .write rule at or above /users/ada/name granted access (/users/$uid/.write at /users/ada: "
                + "auth != null && auth.uid == $uid was false)"
            #expect(first["summary"] == .string(summary))
            #expect(first["denial"]?["tried"]?.arrayValue?.first?["rule"]?["location"] == "/users/$uid")
            #expect(entries[1]["denial"]?["reason"] == "invalidData")
            #expect((first["time"]?.numberValue ?? 0) > 0)

            // From a cursor: only what came after it.
            #expect(try await Self.refusals(server, after: 6)["refusals"] == [])
            _ = try await server.http(.GET, "/users.json")
            let next = try await Self.refusals(server, after: 6)
            #expect(next["refusals"]?.arrayValue?.map { $0["uid"] } == [.null])
            #expect(next["refusals"]?.arrayValue?.first?["authenticated"] == false)
            await client.close()
        }
    }

    /// An onDisconnect write allowed when it was registered but refused when it runs is logged as
    /// the server's own, made for the connection's user.
    @Test func anOnDisconnectWriteRefusedAsItRunsIsLogged() async throws {
        try await SecurityRulesTests.withSecuredServer { server in
            let ada = try await SignedTokens.token(uid: "ada")
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            try await client.requestOK(.auth(credential: ada))
            try await client.requestOK(.onDisconnectPut(path: "/users/ada/online", data: false))
            let closed = SecurityRulesTests.rules.replacingOccurrences(
                of: #"".write": "auth != null && auth.uid == $uid""#, with: #"".write": false"#)
            #expect(closed != SecurityRulesTests.rules)
            try await SecurityRulesTests.admin(server, .PUT, "/.settings/rules.json", closed)
            await client.close()
            var logged: JSONValue?
            #expect(
                await eventually {
                    logged = try await Self.refusals(server)["refusals"]?.arrayValue?.first
                    return logged != nil
                })
            #expect(logged?["transport"] == "disconnect" && logged?["operation"] == "set")
            #expect(logged?["uid"] == "ada" && logged?["path"] == "/users/ada/online")
        }
    }
}
