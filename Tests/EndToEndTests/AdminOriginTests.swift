import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// A development server takes `owner` as its admin; a web page of another origin the developer
/// visits must not be able to use it (REST, event streams, the realtime WebSocket, the console's
/// views), while clients that are no page (no `Origin`) and pages without the admin credential are
/// served as before.
struct AdminOriginTests {
    static let foreign = [("Origin", "https://evil.example")]

    func own(_ server: TestServer) -> [(String, String)] { [("Origin", "http://127.0.0.1:\(server.port)")] }

    @Test func restRefusesTheAdminCredentialFromAPageOfAnotherOrigin() async throws {
        try await withTestServer { server in
            for (method, target, body) in [
                (TestHTTPMethod.PUT, "/a.json?auth=owner", "1"), (.POST, "/list.json?auth=owner", "1"),
                (.GET, "/a.json?auth=owner", nil), (.DELETE, "/a.json?auth=owner", nil),
                (.GET, "/.settings/rules.json?auth=owner", nil),
            ] {
                let refused = try await server.http(method, target, headers: Self.foreign, body: body)
                let message = refused.json?["error"]?.stringValue ?? ""
                #expect(refused.status == 403, "\(method) \(target): \(refused.body)")
                #expect(message.contains("another origin"), "\(message)")
            }
            let bearer = try await server.http(
                .PUT, "/a.json", headers: Self.foreign + [("Authorization", "Bearer owner")], body: "1")
            #expect(bearer.status == 403, "\(bearer.body)")
            #expect(try await server.http(.GET, "/a.json?auth=owner").json == .null, "nothing was written")

            let same = try await server.http(.PUT, "/a.json?auth=owner", headers: own(server), body: "2")
            #expect(same.status == 200, "the console's own page: \(same.body)")
            let none = try await server.http(.PUT, "/a.json?auth=owner", body: "3")
            #expect(none.status == 200, "curl, the SDKs, firebase-admin: \(none.body)")
            let open = try await server.http(.PUT, "/b.json", headers: Self.foreign, body: "4")
            #expect(open.status == 200, "a page without the admin credential, under the rules: \(open.body)")
            #expect(try await server.http(.GET, "/b.json", headers: Self.foreign).json == 4)
        }
    }

    @Test func restRefusesOwnerFromAPageAtAHostNameThatIsNotTheServers() async throws {
        try await withTestServer { server in
            let rebound = [("Origin", "http://evil.example:\(server.port)"), ("Host", "evil.example:\(server.port)")]
            let refused = try await server.http(.PUT, "/a.json?auth=owner", headers: rebound, body: "1")
            #expect(refused.status == 403, "\(refused.body)")
            #expect(refused.json?["error"]?.stringValue?.contains("'owner' is refused") == true, "\(refused.body)")
            let local = [("Origin", "http://localhost:\(server.port)"), ("Host", "localhost:\(server.port)")]
            #expect(try await server.http(.PUT, "/a.json?auth=owner", headers: local, body: "1").status == 200)
        }
    }

    @Test func eventStreamsRefuseTheAdminCredentialFromAPageOfAnotherOrigin() async throws {
        try await withTestServer { server in
            let refused = try await server.eventStream("/a.json?auth=owner", headers: Self.foreign)
            #expect(refused.status == 403)
            await refused.close()
            let own = try await server.eventStream("/a.json?auth=owner", headers: own(server))
            #expect(own.status == 200)
            await own.close()
        }
    }

    @Test func theConsoleViewsRefuseAPageOfAnotherOrigin() async throws {
        try await withTestServer { server in
            for view in ["namespaces", "connections", "load"] {
                let refused = try await server.http(.GET, "/.console/api/\(view)?auth=owner", headers: Self.foreign)
                #expect(refused.status == 403, "\(view): \(refused.body)")
                let same = try await server.http(.GET, "/.console/api/\(view)?auth=owner", headers: own(server))
                #expect(same.status == 200, "\(view): \(same.body)")
            }
        }
    }

    @Test func theRealtimeProtocolRefusesTheAdminCredentialFromAPageOfAnotherOrigin() async throws {
        try await withTestServer { server in
            let page = try await RawWebSocket.connect(to: server, headers: Self.foreign)
            #expect(try await page.requestStatus(.auth(credential: "owner")) == .permissionDenied)
            #expect(
                try await page.requestStatus(.adminAuth(credential: "owner", authVariable: nil)) == .permissionDenied)
            #expect(
                try await page.requestStatus(.put(path: "/a", data: 1, hash: nil)) == .ok,
                "the page stays connected, unauthenticated, under the rules")

            let own = try await RawWebSocket.connect(to: server, headers: own(server))
            #expect(try await own.requestStatus(.auth(credential: "owner")) == .ok)
            let none = try await RawWebSocket.connect(to: server)
            #expect(try await none.requestStatus(.auth(credential: "owner")) == .ok)
        }
    }
}
