import CanopyTesting
import Foundation
import ProcessResources
import Testing
import Tree

@testable import CanopyServer

/// A server stopped (cancelled, as an embedding app or a test stops it) leaves no realtime
/// connection open behind it, whatever the connection was doing.
@Suite struct StoppingServerTests {
    /// Shutdown closes the live sessions, then commits and closes the namespaces. A client that
    /// got in between (greeted, its namespace still open) was added to the sessions after they
    /// were closed and stayed connected to a stopped server for good: an SDK client that
    /// reconnected at that moment never came back to a live one.
    @Test func aConnectionThatArrivesAfterTheSessionsClosedIsClosedToo() async throws {
        try await withTestServer { server in
            // Opened first through REST: on PostgreSQL a realtime client is greeted once its
            // namespace is open, which on a busy machine took longer than a connect's wait.
            #expect(try await server.http(.PUT, "/a.json?ns=late", body: "1").status == 200)
            let early = try await RealtimeTestClient.connect(to: server, namespace: "late")
            try await early.put("a", 1)
            server.server.sessions.closeAll()
            #expect(await early.waitUntilClosed())

            let late = try await RealtimeTestClient.connect(to: server, namespace: "late")
            #expect(await late.waitUntilClosed(), "a connection added after shutdown closed the sessions stayed open")
            #expect(late.pendingMessages.allSatisfy { !$0.isDataPush }, "\(late.pendingMessages)")
            await late.close()
            await early.close()
        }
    }

    /// The server's close frame is followed by the end of the socket only once the peer answered
    /// it. A server that closed the socket at once, as a client was being refused right after its
    /// upgrade, lost that client its hello and the close with it (a third of such connections
    /// under load with HummingbirdWSClient, which then waited for its hello timeout).
    @Test func clientsRefusedAsTheyConnectReadTheHelloAndTheClose() async throws {
        try await withTestServer { server in
            #expect(try await server.http(.PUT, "/a.json?ns=late", body: "1").status == 200)
            server.server.sessions.closeAll()
            for attempt in 0..<100 {
                let client = try await RealtimeTestClient.connect(to: server, namespace: "late")
                #expect(await client.waitUntilClosed(), "connection \(attempt) stayed open")
                await client.close()
            }
        }
    }

    /// A peer that never answers the server's close frame has its socket closed all the same.
    @Test func aPeerThatDoesNotAnswerTheCloseIsClosedAfterTheHandshakeTimeout() async throws {
        try await withTestServer { server in
            #expect(try await server.http(.PUT, "/a.json?ns=late", body: "1").status == 200)
            server.server.sessions.closeAll()
            let socket = try await RawWebSocket.connect(to: server, namespace: "late")
            #expect(try await socket.closeCode() == 1001)
            #expect(try await socket.waitForEnd(timeout: .seconds(30)), "the socket outlived the close handshake")
        }
    }

    /// A realtime client is greeted before its namespace is open. When the server stops while the
    /// namespace loads, the connection still ends, and the namespace that finished opening during
    /// the shutdown is closed with the others.
    ///
    /// On the PostgreSQL store (`CANOPY_TEST_STORE=postgres`) a server is a cluster node, which
    /// greets a client only once it holds the namespace and has loaded it (or redirects it, see
    /// `RealtimeSession.open`): the hello then waits for 200,000 leaves to load, which took more
    /// than the default 15 s in a debug build on a busy 2-core machine.
    @Test func aConnectionWhoseNamespaceIsStillOpeningEndsWhenTheServerStops() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let configuration = TestServer.defaultConfiguration(dataDirectory: folder)
        let writer = try await TestServer.start(configuration: configuration)
        for part in 0..<10 {
            let leaves = (0..<20_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
            let put = try await writer.http(.PUT, "/big/p\(part).json?ns=big", body: "{\(leaves)}")
            #expect(put.status == 200, "\(put.body)")
        }
        await writer.stop()

        let server = try await TestServer.start(configuration: configuration)
        let helloWait = TestStore.isPostgres ? .seconds(120) : RealtimeTestClient.defaultTimeout
        let client = try await RealtimeTestClient.connect(to: server, namespace: "big", timeout: helloWait)
        await server.stop()
        #expect(await client.waitUntilClosed(timeout: .seconds(30)), "the connection outlived the server")
        await client.close()
        #expect(OpenFiles.paths(under: folder) == [], "a namespace was left open")
    }
}
