import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// Rules and credentials enforced on every way into the data: REST, event streams, the realtime
/// protocol and onDisconnect, against a real server.
struct SecurityRulesTests {
    /// Each user reads and writes only below `users/<uid>`; `public` is readable by anyone signed in;
    /// `admins/<uid>` (true) lets a user read everything under `users`.
    static let rules = """
        {
          // Comments are allowed, as in Firebase's rules files.
          "rules": {
            "users": {
              ".read": "auth != null && root.child('admins').child(auth.uid).val() == true",
              "$uid": {
                ".read": "auth != null && auth.uid == $uid",
                ".write": "auth != null && auth.uid == $uid",
                "age": { ".validate": "newData.isNumber() && newData.val() >= 0" }
              }
            },
            "public": { ".read": "auth != null", ".write": "auth != null" },
            "posts": {
              ".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid",
              ".indexOn": ["owner"]
            }
          }
        }
        """

    /// A server with ``rules``, HS256 tokens of ``SignedTokens/secret`` and an admin secret; not in
    /// emulator mode unless `emulator`.
    static func withSecuredServer(emulator: Bool = false, _ body: (TestServer) async throws -> Void) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rulesFile = folder + "/rules.json"
        try rules.write(toFile: rulesFile, atomically: true, encoding: .utf8)
        try await withTestServer(dataDirectory: folder + "/data") { configuration in
            configuration.rulesFile = rulesFile
            configuration.authentication.sharedSecret = SignedTokens.secret
            configuration.authentication.adminSecret = SignedTokens.adminSecret
            configuration.authentication.isEmulator = emulator
        } _: { server in
            try await body(server)
        }
    }

    static func admin(_ server: TestServer, _ method: TestHTTPMethod, _ path: String, _ body: String) async throws {
        let response = try await server.http(
            method, path, headers: [("Authorization", "Bearer \(SignedTokens.adminSecret)")], body: body)
        #expect(response.status == 200, "\(response.body)")
    }

    // MARK: REST

    @Test func restReadsAndWritesNeedTheRightUser() async throws {
        try await Self.withSecuredServer { server in
            try await Self.admin(server, .PUT, "/users/ada.json", #"{"name": "Ada"}"#)
            let ada = try await SignedTokens.token(uid: "ada")
            let bob = try await SignedTokens.token(uid: "bob")

            let anonymous = try await server.http(.GET, "/users/ada.json")
            #expect(anonymous.status == 401 && anonymous.json == ["error": "Permission denied"])
            #expect(try await server.http(.GET, "/users/ada.json?auth=\(ada)").json == ["name": "Ada"])
            #expect(
                try await server.http(.GET, "/users/ada/name.json", headers: [("Authorization", "Bearer \(ada)")]).json
                    == "Ada")
            #expect(try await server.http(.GET, "/users/ada.json?access_token=\(bob)").status == 401)
            // Rules are not filters: ada cannot read all of `users`, though she can read her part.
            #expect(try await server.http(.GET, "/users.json?auth=\(ada)").status == 401)

            #expect(try await server.http(.PUT, "/users/ada/name.json?auth=\(bob)", body: #""Bob""#).status == 401)
            #expect(try await server.http(.PUT, "/users/ada/name.json?auth=\(ada)", body: #""Ada L.""#).status == 200)
            // .validate: age must be a non-negative number.
            #expect(try await server.http(.PUT, "/users/ada/age.json?auth=\(ada)", body: "-1").status == 401)
            #expect(try await server.http(.PUT, "/users/ada/age.json?auth=\(ada)", body: "36").status == 200)
            // A multi-path update is allowed only if every part is.
            let mixed = try await server.http(
                .PATCH, "/users.json?auth=\(ada)", body: #"{"ada/name": "A", "bob/name": "B"}"#)
            #expect(mixed.status == 401)
            #expect(
                try await server.http(.GET, "/users/ada.json?auth=\(ada)").json == ["name": "Ada L.", "age": 36])

            // An admin listed in the data reads all users (a rule reading `root`).
            try await Self.admin(server, .PUT, "/admins/bob.json", "true")
            #expect(try await server.http(.GET, "/users.json?auth=\(bob)").status == 200)
        }
    }

    /// `?auth=`, `?access_token=` and `Authorization: Bearer` each make a request act as the token's
    /// user: it reads and writes what the rules let that user, and nothing else.
    @Test func everyWayOfGivingATokenActsAsItsUser() async throws {
        try await Self.withSecuredServer { server in
            try await Self.admin(server, .PUT, "/users.json", #"{"ada": {"name": "Ada"}, "bob": {"name": "Bob"}}"#)
            let ada = try await SignedTokens.token(uid: "ada")
            let admin = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]
            let ways: [(name: String, query: String, headers: [(String, String)])] = [
                ("auth", "?auth=\(ada)", []),
                ("access_token", "?access_token=\(ada)", []),
                ("bearer", "", [("Authorization", "Bearer \(ada)")]),
            ]
            for way in ways {
                let read = try await server.http(.GET, "/users/ada/name.json\(way.query)", headers: way.headers)
                #expect(read.status == 200 && read.json == "Ada", "\(way.name): \(read.body)")
                let write = try await server.http(
                    .PUT, "/users/ada/via.json\(way.query)", headers: way.headers, body: #""\#(way.name)""#)
                #expect(write.status == 200, "\(way.name): \(write.body)")
                let written = try await server.http(.GET, "/users/ada/via.json", headers: admin)
                #expect(written.json == .string(way.name))
                // The same request as bob's data: refused.
                #expect(try await server.http(.GET, "/users/bob.json\(way.query)", headers: way.headers).status == 401)
                let other = try await server.http(
                    .PUT, "/users/bob/via.json\(way.query)", headers: way.headers, body: #""\#(way.name)""#)
                #expect(other.status == 401, "\(way.name)")
            }
            #expect(try await server.http(.GET, "/users/bob.json", headers: admin).json == ["name": "Bob"])
        }
    }

    @Test func badCredentialsGetAClearErrorAndNoAccess() async throws {
        try await Self.withSecuredServer { server in
            let valid = try await SignedTokens.token(uid: "ada")
            let parts = valid.split(separator: ".")
            let forged = "\(parts[0]).\(parts[1]).\(SignedTokens.base64URL(Data(repeating: 7, count: 32)))"
            let cases: [(String, String, String)] = [
                ("malformed", "not-a-token", "malformed"),
                ("wrong signature", forged, "signature"),
                ("expired", try await SignedTokens.token(uid: "ada", lifetime: -3600), "expired"),
                ("alg none outside emulator mode", SignedTokens.unsigned(uid: "ada"), "emulator"),
                ("oversized", String(repeating: "a", count: 20_000), "limit"),
                ("owner outside emulator mode", "owner", "--emulator"),
            ]
            for (name, token, reason) in cases {
                let response = try await server.http(.GET, "/public.json?auth=\(token)")
                #expect(response.status == 401, "\(name)")
                let message = response.json?["error"]?.stringValue ?? ""
                #expect(message.lowercased().contains(reason), "\(name): \(message)")
            }
        }
    }

    @Test func authVariableOverrideNeedsTheAdminAndActsAsItsIdentity() async throws {
        try await Self.withSecuredServer { server in
            try await Self.admin(server, .PUT, "/users/ada.json", #"{"name": "Ada"}"#)
            let asAda = TestServer.query(["auth_variable_override": #"{"uid":"ada"}"#])
            let asNobody = TestServer.query(["auth_variable_override": "null"])
            let admin = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]
            #expect(try await server.http(.GET, "/users/ada.json\(asAda)", headers: admin).json == ["name": "Ada"])
            #expect(try await server.http(.GET, "/users/ada.json\(asNobody)", headers: admin).status == 401)
            #expect(try await server.http(.GET, "/users/bob.json\(asAda)", headers: admin).status == 401)
            // Without admin credentials the override is refused, not ignored.
            let ada = try await SignedTokens.token(uid: "ada")
            let refused = try await server.http(.GET, "/users/ada.json\(asAda)&auth=\(ada)")
            #expect(refused.status == 401 && refused.body.contains("admin"))
        }
    }

    @Test func queryBasedRulesAllowOnlyTheQueryTheyDescribe() async throws {
        try await Self.withSecuredServer { server in
            try await Self.admin(
                server, .PUT, "/posts.json", #"{"p1": {"owner": "ada"}, "p2": {"owner": "bob"}}"#)
            let ada = try await SignedTokens.token(uid: "ada")
            let own = TestServer.query(["orderBy": #""owner""#, "equalTo": #""ada""#, "auth": ada])
            #expect(try await server.http(.GET, "/posts.json\(own)").json == ["p1": ["owner": "ada"]])
            let others = TestServer.query(["orderBy": #""owner""#, "equalTo": #""bob""#, "auth": ada])
            #expect(try await server.http(.GET, "/posts.json\(others)").status == 401)
            #expect(try await server.http(.GET, "/posts.json?auth=\(ada)").status == 401)
        }
    }

    // MARK: Rules documents

    @Test func aBadRulesDocumentIsRefusedWithWhereAndTheOldRulesStay() async throws {
        try await Self.withSecuredServer { server in
            let admin = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]
            let bad = """
                {
                  "rules": {
                    ".read": "auth.uid ==",
                    ".write": false
                  }
                }
                """
            let refused = try await server.http(.PUT, "/.settings/rules.json", headers: admin, body: bad)
            #expect(refused.status == 400)
            let message = refused.json?["error"]?.stringValue ?? ""
            #expect(message.hasPrefix("Line 3, column"), "\(message)")
            let current = try await server.http(.GET, "/.settings/rules.json", headers: admin)
            #expect(current.body == Self.rules)
            // Without its comments, for tools that read it as plain JSON.
            let strict = try await server.http(.GET, "/.settings/rules.json?format=strict", headers: admin)
            #expect(strict.json?["rules"]?["public"] == [".read": "auth != null", ".write": "auth != null"])
            // Only the admin reads or replaces the rules.
            let ada = try await SignedTokens.token(uid: "ada")
            #expect(try await server.http(.GET, "/.settings/rules.json?auth=\(ada)").status == 401)
            #expect(
                try await server.http(.PUT, "/.settings/rules.json?auth=\(ada)", body: #"{"rules": {}}"#).status == 401)
        }
    }

    @Test func aServerWithABadRulesFileDoesNotStart() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #"{"rules": {".read": "nope()"}}"#.write(toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        var configuration = TestServer.defaultConfiguration(dataDirectory: folder + "/data")
        configuration.rulesFile = folder + "/rules.json"
        await #expect {
            _ = try await TestServer.start(configuration: configuration)
        } throws: { error in
            "\(error)".contains("rules.json") && "\(error)".contains("line 1")
        }
    }

    // MARK: Realtime

    @Test func realtimeAuthUnauthAndListensTheRulesRefuse() async throws {
        try await Self.withSecuredServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            let denied = try await client.request(.listen(path: "/users/ada", query: nil, tag: nil, hash: nil))
            #expect(denied.status == .permissionDenied)
            let ada = try await SignedTokens.token(uid: "ada")
            let answer = try await client.requestOK(.auth(credential: ada))
            #expect(answer["auth"]?["uid"] == "ada" && answer["auth"]?["provider"] == "password")
            #expect(answer["expires"]?.numberValue != nil)
            try await client.requestOK(.listen(path: "/users/ada", query: nil, tag: nil, hash: nil))
            try await client.put("/users/ada/name", "Ada")
            let refusedWrite = try await client.request(.put(path: "/users/bob/name", data: "x", hash: nil))
            #expect(refusedWrite.status == .permissionDenied)
            let refusedGet = try await client.request(.get(path: "/users", query: nil))
            #expect(refusedGet.status == .permissionDenied)

            // Signing out loses the listen: the server revokes it.
            try await client.requestOK(.unauth)
            let revoked = try await client.next { if case .listenRevoked = $0 { true } else { false } }
            #expect(revoked == .listenRevoked(path: "users/ada", query: nil))

            let bad = try await client.request(.auth(credential: "garbage"))
            #expect(bad.status == .invalidToken)
            let expired = try await client.request(
                .auth(credential: try await SignedTokens.token(uid: "ada", lifetime: -600)))
            #expect(expired.status == .expiredToken)
            await client.close()
        }
    }

    @Test func anExpiringTokenIsRevokedAndItsListensWithIt() async throws {
        try await Self.withSecuredServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            // Its `exp` passed 45 s ago; with the server's 60 s of clock skew it is valid for 14–15 s more
            // (long enough for a busy machine to take it before it lapses; 6 s once was not).
            let token = try await SignedTokens.token(uid: "ada", lifetime: 15 - 60)
            try await client.requestOK(.auth(credential: token))
            try await client.requestOK(.listen(path: "/users/ada", query: nil, tag: nil, hash: nil))
            let revokedAuth = try await client.next(timeout: .seconds(30)) {
                if case .authRevoked = $0 { true } else { false }
            }
            #expect(revokedAuth == .authRevoked(status: .expiredToken, reason: "Auth token is expired."))
            let revokedListen = try await client.next { if case .listenRevoked = $0 { true } else { false } }
            #expect(revokedListen == .listenRevoked(path: "users/ada", query: nil))
            // The connection is unauthenticated now.
            #expect(
                try await client.request(.put(path: "/users/ada/x", data: 1, hash: nil)).status == .permissionDenied)
            await client.close()
        }
    }

    @Test func adminAuthWithAnAuthVariableActsAsThatIdentity() async throws {
        try await Self.withSecuredServer { server in
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            let user = try await SignedTokens.token(uid: "ada")
            let notAdmin = try await client.request(.adminAuth(credential: user, authVariable: nil))
            #expect(notAdmin.status == .invalidToken)
            try await client.requestOK(.adminAuth(credential: SignedTokens.adminSecret, authVariable: ["uid": "ada"]))
            try await client.put("/users/ada/name", "Ada")
            #expect(
                try await client.request(.put(path: "/users/bob/name", data: "x", hash: nil)).status
                    == .permissionDenied)
            try await client.requestOK(.adminAuth(credential: SignedTokens.adminSecret, authVariable: nil))
            try await client.put("/users/bob/name", "Bob")
            try await client.requestOK(.adminAuth(credential: SignedTokens.adminSecret, authVariable: .null))
            #expect(try await client.request(.get(path: "/public", query: nil)).status == .permissionDenied)
            await client.close()
        }
    }

    @Test func changedRulesRevokeRealtimeListensAndEventStreams() async throws {
        try await Self.withSecuredServer { server in
            let ada = try await SignedTokens.token(uid: "ada")
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            try await client.requestOK(.auth(credential: ada))
            try await client.requestOK(.listen(path: "/public", query: nil, tag: nil, hash: nil))
            try await client.requestOK(.listen(path: "/users/ada", query: nil, tag: nil, hash: nil))
            let stream = try await server.eventStream("/public.json?auth=\(ada)")
            #expect(try await stream.nextData().name == "put")

            let closed = Self.rules.replacingOccurrences(
                of: #""public": { ".read": "auth != null""#, with: #""public": { ".read": false"#)
            #expect(closed != Self.rules)
            try await Self.admin(server, .PUT, "/.settings/rules.json", closed)

            let revoked = try await client.next { if case .listenRevoked = $0 { true } else { false } }
            #expect(revoked == .listenRevoked(path: "public", query: nil))
            #expect(try await stream.next { $0.name == "cancel" }.name == "cancel")
            // The other listen stays: a write there still reaches the client.
            try await client.put("/users/ada/name", "Ada")
            let update = try await client.next { $0 == .overwrite(path: "users/ada/name", data: "Ada", tag: nil) }
            #expect(update == .overwrite(path: "users/ada/name", data: "Ada", tag: nil))
            await stream.close()
            await client.close()
        }
    }

    /// `users` is readable by admins, a rule that reads `root`: taking bob off `admins` revokes his
    /// listens there (realtime and event stream) at once; his own `users/bob`, allowed by a rule
    /// that does not read the data, stays.
    @Test func aWriteThatTakesReadAccessAwayRevokesTheListensItAllowed() async throws {
        try await Self.withSecuredServer { server in
            try await Self.admin(server, .PUT, "/admins/bob.json", "true")
            let bob = try await SignedTokens.token(uid: "bob")
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            try await client.requestOK(.auth(credential: bob))
            try await client.requestOK(.listen(path: "/users", query: nil, tag: nil, hash: nil))
            try await client.requestOK(.listen(path: "/users/bob", query: nil, tag: nil, hash: nil))
            let stream = try await server.eventStream("/users.json?auth=\(bob)")
            #expect(try await stream.nextData().name == "put")

            // A write elsewhere that leaves the access as it was revokes nothing.
            try await Self.admin(server, .PUT, "/admins/carol.json", "true")
            try await client.put("/users/bob/name", "Bob")
            let first = try await client.next { $0 == .overwrite(path: "users/bob/name", data: "Bob", tag: nil) }
            #expect(first == .overwrite(path: "users/bob/name", data: "Bob", tag: nil))

            try await Self.admin(server, .DELETE, "/admins/bob.json", "")
            let revoked = try await client.next { if case .listenRevoked = $0 { true } else { false } }
            #expect(revoked == .listenRevoked(path: "users", query: nil))
            #expect(try await stream.next { $0.name == "cancel" }.name == "cancel")
            try await client.put("/users/bob/age", 40)
            let update = try await client.next { $0 == .overwrite(path: "users/bob/age", data: 40, tag: nil) }
            #expect(update == .overwrite(path: "users/bob/age", data: 40, tag: nil))
            // Being made an admin again does not bring a revoked listen back.
            try await Self.admin(server, .PUT, "/admins/bob.json", "true")
            #expect(try await client.request(.get(path: "/users", query: nil)).status == .ok)
            await stream.close()
            await client.close()
        }
    }

    @Test func anEventStreamEndsWithAuthRevokedWhenItsTokenExpires() async throws {
        try await Self.withSecuredServer { server in
            // Valid for 14–15 s more (its `exp` passed 45 s ago; the server allows 60 s of skew). With
            // 6 s, a CI machine busy starting every suite once sent it after it lapsed.
            let token = try await SignedTokens.token(uid: "ada", lifetime: 15 - 60)
            let stream = try await server.eventStream("/public.json?auth=\(token)")
            try #require(stream.status == 200, "the token lapsed before the stream was opened")
            #expect(try await stream.nextData().name == "put")
            let revoked = try await stream.next(timeout: .seconds(30)) { $0.name == "auth_revoked" }
            #expect(revoked.json == "credential is no longer valid")
            await stream.close()
        }
    }

    @Test func anEventStreamTheRulesRefuseIsNotOpened() async throws {
        try await Self.withSecuredServer { server in
            let response = try await server.http(.GET, "/users/ada.json", headers: [("Accept", "text/event-stream")])
            #expect(response.status == 401 && response.json == ["error": "Permission denied"])
        }
    }

    // MARK: onDisconnect

    @Test func onDisconnectIsCheckedWhenRegisteredAndWhenItRuns() async throws {
        try await Self.withSecuredServer { server in
            let ada = try await SignedTokens.token(uid: "ada")
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            try await client.requestOK(.auth(credential: ada))
            let refused = try await client.request(.onDisconnectPut(path: "/users/bob/status", data: "offline"))
            #expect(refused.status == .permissionDenied)
            try await client.requestOK(.onDisconnectPut(path: "/users/ada/status", data: "offline"))
            try await client.requestOK(.onDisconnectPut(path: "/public/ada", data: "gone"))

            // The rules change before the client goes: `public` is no longer writable.
            let closed = Self.rules.replacingOccurrences(
                of: #""public": { ".read": "auth != null", ".write": "auth != null""#,
                with: #""public": { ".read": "auth != null", ".write": false"#)
            #expect(closed != Self.rules)
            try await Self.admin(server, .PUT, "/.settings/rules.json", closed)
            await client.close()

            let admin = [("Authorization", "Bearer \(SignedTokens.adminSecret)")]
            var status: JSONValue?
            for _ in 0..<100 {
                status = try await server.http(.GET, "/users/ada/status.json", headers: admin).json
                if status == "offline" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(status == "offline")
            #expect(try await server.http(.GET, "/public/ada.json", headers: admin).json == .null)
            #expect(try await server.http(.GET, "/users/bob/status.json", headers: admin).json == .null)
        }
    }

    // MARK: Emulator mode

    @Test func emulatorModeAcceptsOwnerAndTheSDKsMockTokens() async throws {
        try await Self.withSecuredServer(emulator: true) { server in
            let owner = [("Authorization", "Bearer owner")]
            #expect(try await server.http(.PUT, "/users/ada/name.json", headers: owner, body: #""Ada""#).status == 200)
            let mock = SignedTokens.unsigned(uid: "ada")
            #expect(try await server.http(.GET, "/users/ada/name.json?auth=\(mock)").json == "Ada")
            #expect(try await server.http(.GET, "/users/bob.json?auth=\(mock)").status == 401)
            let client = try await RealtimeTestClient.connect(to: server, namespace: nil)
            let answer = try await client.requestOK(.auth(credential: mock))
            #expect(answer["auth"]?["uid"] == "ada")
            #expect(try await client.get("/users/ada/name") == "Ada")
            await client.close()
        }
    }
}
