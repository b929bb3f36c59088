import CanopyTesting
import Testing
import Transport
import Tree

/// The connection itself: the hello, liveness messages and actions every client sends.
struct ConnectionTests {
    @Test func helloComesFirstWithServerTimeVersionHostAndSession() async throws {
        try await withTestServer { server in
            let before = nowMilliseconds()
            let client = try await RealtimeTestClient.connect(to: server)
            let after = nowMilliseconds()
            let hello = client.hello
            #expect(Double(hello.timestamp) >= before - 1000 && Double(hello.timestamp) <= after + 1000)
            #expect(hello.version == "5")
            #expect(hello.host == "127.0.0.1:\(server.port)")
            #expect(!hello.sessionID.isEmpty)
            #expect(client.receivedFrames.first?.contains(#""t":"h""#) == true)
            let other = try await RealtimeTestClient.connect(to: server)
            #expect(other.hello.sessionID != hello.sessionID)
            await other.close()
            await client.close()
        }
    }

    @Test func pingIsAnsweredWithPong() async throws {
        try await withClients(1) { _, clients in
            try await clients[0].sendPing()
            let answer = try await clients[0].nextMessage()
            #expect(answer == .pong)
        }
    }

    @Test func keepaliveFramesAreIgnored() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.sendRaw("0")
            try await client.sendRaw("0")
            try await client.put("k", "after keepalives")
            #expect(try await client.get("k") == "after keepalives")
            #expect(client.pendingMessages.isEmpty, "keepalives were answered: \(client.pendingMessages)")
        }
    }

    @Test func statsAreAnsweredOK() async throws {
        try await withClients(1) { _, clients in
            let answer = try await clients[0].request(.stats(["c": ["sdk.js.10-0-0": 1]]))
            #expect(answer.status == .ok)
        }
    }

    @Test func authAndUnauthAreAnsweredOK() async throws {
        try await withClients(1) { _, clients in
            let auth = try await clients[0].request(.auth(credential: "owner"))
            let unauth = try await clients[0].request(.unauth)
            #expect(auth.status == .ok)
            #expect(unauth.status == .ok)
        }
    }

    @Test func unknownActionIsRefusedAndTheConnectionStaysUsable() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let answer = try await client.request(.unknown(action: "zz"))
            #expect(answer.status == .unknownAction)
            try await client.put("still", true)
            #expect(try await client.get("still") == true)
        }
    }
}
