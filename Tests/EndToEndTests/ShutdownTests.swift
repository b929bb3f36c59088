import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// A graceful shutdown (SIGTERM) of the real binary ends what would keep it alive and runs every
/// closed connection's onDisconnect writes before the last commit.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct ShutdownTests {
    @Test(.timeLimit(.minutes(2)))
    func sigtermEndsOpenEventStreamsAndExits() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        let put = try await TestServer.http(baseURL: server.baseURL, .PUT, "/a.json?ns=s", body: "1")
        #expect(put.status == 200)
        var streams: [EventStreamReader] = []
        for _ in 0..<3 {
            let stream = try await TestServer.eventStream(baseURL: server.baseURL, "/a.json?ns=s")
            _ = try await stream.nextData()
            streams.append(stream)
        }
        await server.terminate()
        #expect(server.exitStatus == 0, "log:\n\(server.log)")
        for stream in streams {
            // The stream ended: whatever was left is read, then nothing more comes.
            while !stream.isFinished, (try? await stream.next(timeout: .seconds(10))) != nil {}
            #expect(stream.isFinished)
            await stream.close()
        }
        #expect(server.log.contains("graceful shutdown started"), "the shutdown is not logged:\n\(server.log)")
    }

    /// Presence must not stay "online" after a clean restart: every connection's onDisconnect
    /// writes run before the commit queues finish.
    @Test(.timeLimit(.minutes(3)))
    func everyOnDisconnectWriteRunsBeforeACleanExit() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clientCount = 60
        let server = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        var clients: [RealtimeTestClient] = []
        for index in 0..<clientCount {
            let client = try await RealtimeTestClient.connect(url: server.webSocketURL(namespace: "presence"))
            try await client.put("online/c\(index)", true)
            try await client.requestOK(.onDisconnectPut(path: "online/c\(index)", data: .null))
            try await client.requestOK(
                .onDisconnectPut(path: "lastSeen/c\(index)", data: [".sv": "timestamp"]))
            clients.append(client)
        }
        await server.terminate()
        #expect(server.exitStatus == 0, "log:\n\(server.log)")
        for client in clients { await client.close() }

        let restarted = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        defer { Task { await restarted.terminate() } }
        let online = try await TestServer.http(baseURL: restarted.baseURL, .GET, "/online.json?ns=presence")
        #expect(online.body == "null", "connections still online after a clean restart: \(online.body)")
        let seen = try await TestServer.http(
            baseURL: restarted.baseURL, .GET, "/lastSeen.json?ns=presence&shallow=true")
        guard case .object(let members)? = seen.json else {
            Issue.record("no lastSeen: \(seen.body)")
            return
        }
        #expect(members.count == clientCount)
    }
}
