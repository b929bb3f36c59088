import CanopyServer
import CanopyTesting
import Foundation
import ProcessResources
import Testing
import Transport
import Tree

/// Stalled readers cost the server what its limits allow, not what they are sent: measured on a real
/// `canopy-server` process by its resident memory in `/proc`.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct MemoryBoundTests {
    @Test(.timeLimit(.minutes(5)))
    func stalledReadersAndStreamsLeaveTheServersMemoryBounded() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder,
            arguments: [
                "--no-fsync", "--max-total-pending-outbound-bytes", "\(16 << 20)", "--heartbeat-interval", "300",
                "--sse-keepalive-interval", "600",
            ])
        do {
            try await Self.stallReaders(on: server)
        } catch {
            await server.kill()
            throw error
        }
        await server.kill()
    }

    private static func stallReaders(on server: ServerProcess) async throws {
        let pid = server.pid
        let writer = try await RealtimeTestClient.connect(url: server.webSocketURL(namespace: "test"))
        try await writer.put("hot", "start")
        let before = try ProcessMemory.residentBytes(of: pid)
        var stalled: [RealtimeTestClient] = []
        for _ in 0..<20 {
            let client = try await RealtimeTestClient.connect(url: server.webSocketURL(namespace: "test"))
            try await client.listen("hot")
            try await client.vanish()
            stalled.append(client)
        }
        var streams: [StalledClient] = []
        for _ in 0..<5 {
            streams.append(
                try StalledClient(
                    port: server.port,
                    request: "GET /hot.json?ns=test HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"))
        }
        defer { for stream in streams { stream.close() } }

        // 4,000 updates of 8 KB (small enough to be copied for each reader): 32 MB sent to each of
        // 25 readers, 800 MB if the server kept what they do not read.
        let value = JSONValue.string(String(repeating: "x", count: 8_000))
        var peak = before
        for index in 0..<4_000 {
            try await writer.put("hot", ["n": .number(Double(index)), "v": value])
            if index % 100 == 0 { peak = max(peak, try ProcessMemory.residentBytes(of: pid)) }
        }
        peak = max(peak, try ProcessMemory.residentBytes(of: pid))
        let grown = peak - before
        #expect(grown < 200 << 20, "the server grew by \(grown >> 20) MB")

        // The stalled readers were closed; the writer carries on.
        let metrics = try await TestServer.http(baseURL: server.baseURL, .GET, "/metrics")
        let trips = metrics.body.split(separator: "\n").first {
            $0.hasPrefix(#"canopy_limit_trips_total{limit="total_pending_outbound_bytes"}"#)
        }
        let count = trips.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
        #expect(count >= 1, "no stalled reader was closed")
        try await writer.put("after", 1)
        #expect(try await writer.get("after") == 1)
        for client in stalled { await client.close() }
        await writer.close()
    }
}
