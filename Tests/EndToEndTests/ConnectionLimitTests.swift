import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

@testable import CanopyServer

/// What one realtime connection can make the server hold: its listens and its onDisconnect
/// operations are capped, with answers that say why, and what it holds within the caps keeps working.
@Suite struct ConnectionLimitTests {
    private static func listen(_ path: String) -> ClientAction {
        .listen(path: path, query: nil, tag: nil, hash: nil)
    }

    @Test func listensPastTheCapAreRefusedAndTheOthersGoOn() async throws {
        try await withTestServer(configure: { $0.maxListensPerConnection = 5 }) { server in
            let client = try await RealtimeTestClient.connect(to: server)
            for index in 0..<5 { try await client.requestOK(Self.listen("/rooms/r\(index)")) }
            let refused = try await client.request(Self.listen("/rooms/r5"))
            #expect(refused.status == .tooManyListens)
            #expect(refused.data == "this connection already has 5 listens")
            #expect(server.metric(#"canopy_limit_trips_total{limit="listens_per_connection"}"#) == 1)
            // Listening again where it listens is not one more, and an unlisten makes room.
            try await client.requestOK(Self.listen("/rooms/r0"))
            try await client.requestOK(.unlisten(path: "/rooms/r1", query: nil, tag: nil))
            try await client.requestOK(Self.listen("/rooms/r5"))
            #expect(try await client.request(Self.listen("/rooms/r6")).status == .tooManyListens)

            // Its listens still get their updates.
            while client.pendingMessages.contains(where: \.isDataPush) { _ = try await client.nextPush() }
            let writer = try await RealtimeTestClient.connect(to: server)
            try await writer.put("rooms/r5", "hello")
            #expect(try await client.nextPush() == .overwrite(path: "rooms/r5", data: "hello", tag: nil))
            await writer.close()
            await client.close()
        }
    }

    @Test func onDisconnectOperationsPastTheirByteCapAreRefused() async throws {
        try await withTestServer(configure: { $0.maxOnDisconnectBytes = 2048 }) { server in
            let client = try await RealtimeTestClient.connect(to: server)
            let large = JSONValue.string(String(repeating: "x", count: 1500))
            try await client.requestOK(.onDisconnectPut(path: "/presence/a", data: large))
            let refused = try await client.request(.onDisconnectPut(path: "/presence/b", data: large))
            #expect(refused.status == .tooBig)
            #expect(
                refused.data == "the onDisconnect operations of this connection would hold more than 2048 bytes")
            let merge = try await client.request(.onDisconnectMerge(path: "/presence", data: ["b": large]))
            #expect(merge.status == .tooBig)
            #expect(server.metric(#"canopy_limit_trips_total{limit="on_disconnect_bytes"}"#) == 2)

            // Cancelling makes room; what was accepted runs when the connection goes.
            try await client.requestOK(.onDisconnectCancel(path: "/presence/a"))
            try await client.requestOK(.onDisconnectPut(path: "/presence/b", data: large))
            await client.close()
            var stored = try await server.http(.GET, "/presence.json?ns=test")
            let deadline = ContinuousClock.now + .seconds(15)
            while stored.body == "null", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                stored = try await server.http(.GET, "/presence.json?ns=test")
            }
            #expect(stored.json == ["b": large])
        }
    }
}

/// Event streams whose clients stop reading are closed at their queue's cap, as realtime
/// connections are.
@Suite struct EventStreamLimitTests {
    @Test func anEventStreamThatStopsReadingIsClosedAtItsCap() async throws {
        let configure: (inout ServerConfiguration) -> Void = {
            $0.maxPendingOutboundBytes = 256 * 1024
            $0.sseKeepaliveInterval = .seconds(600)
        }
        try await withTestServer(configure: configure) { server in
            let writer = try await RealtimeTestClient.connect(to: server)
            try await writer.put("hot", "start")
            let stalled = try StalledClient(
                port: server.port,
                request: "GET /hot.json?ns=test HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            defer { stalled.close() }
            #expect(await server.waitForOpenConnections(2, timeout: .seconds(10)))

            // 400 updates of 100 KB: far more than the cap and the kernel's socket buffers.
            let big = JSONValue.string(String(repeating: "x", count: 100_000))
            for index in 0..<400 {
                try await writer.put("hot", ["n": .number(Double(index)), "blob": big])
                if await server.waitForOpenConnections(1, timeout: .zero) { break }
            }
            let trips = #"canopy_limit_trips_total{limit="pending_outbound_bytes"}"#
            let closed = await server.waitForOpenConnections(1, timeout: .seconds(20))
            #expect(
                closed,
                Comment(
                    rawValue: "the stalled stream is still open: connections \(server.openConnections ?? -1), "
                        + "listeners \(server.metric("canopy_listeners_active") ?? -1), "
                        + "trips \(server.metric(trips) ?? -1)"))
            #expect((server.metric(trips) ?? 0) >= 1)
            #expect(server.metric("canopy_listeners_active") == 0)
            try await writer.put("after", 1)
            await writer.close()
        }
    }
}

/// Readers that stall together are bounded by one total, whatever each one's own cap.
@Suite struct OutboundBudgetTests {
    @Test func stalledReadersAreClosedWhenTogetherTheyHoldTooMuch() async throws {
        // Each reader's own cap is far above what this test sends; only the total can close them.
        let configure: (inout ServerConfiguration) -> Void = {
            $0.maxPendingOutboundBytes = 512 * 1024 * 1024
            $0.maxTotalPendingOutboundBytes = 2 * 1024 * 1024
            $0.heartbeatInterval = .seconds(120)
            $0.sseKeepaliveInterval = .seconds(600)
        }
        try await withTestServer(configure: configure) { server in
            let writer = try await RealtimeTestClient.connect(to: server)
            try await writer.put("hot", "start")
            var stalled: [RealtimeTestClient] = []
            for _ in 0..<3 {
                let client = try await RealtimeTestClient.connect(to: server)
                try await client.listen("hot")
                try await client.vanish()
                stalled.append(client)
            }
            let stream = try StalledClient(
                port: server.port,
                request: "GET /hot.json?ns=test HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            defer { stream.close() }
            #expect(await server.waitForOpenConnections(5, timeout: .seconds(10)))

            let big = JSONValue.string(String(repeating: "x", count: 100_000))
            for index in 0..<600 {
                try await writer.put("hot", ["n": .number(Double(index)), "blob": big])
                if await server.waitForOpenConnections(1, timeout: .zero) { break }
            }
            #expect(await server.waitForOpenConnections(1, timeout: .seconds(20)), "stalled readers are still open")
            #expect((server.metric(#"canopy_limit_trips_total{limit="total_pending_outbound_bytes"}"#) ?? 0) >= 4)
            #expect((server.metric(#"canopy_limit_trips_total{limit="pending_outbound_bytes"}"#) ?? 0) == 0)
            #expect(server.server.outboundBudget.total == 0)
            try await writer.put("after", 1)
            for client in stalled { await client.close() }
            await writer.close()
        }
    }
}

/// Any client may order a query by any child; what the indexes it makes the server build cost
/// stays bounded per node.
@Suite struct QueryIndexLimitTests {
    @Test func queriesByManyChildrenLeaveAtMostTheCapOfIndexesOnANode() async throws {
        try await withTestServer { server in
            let fields = (0..<12).map { "f\($0)" }
            var players: [String: JSONValue] = [:]
            for index in 0..<20 {
                players["p\(index)"] = .object(
                    Dictionary(uniqueKeysWithValues: fields.map { ($0, JSONValue.number(Double(index))) }))
            }
            let put = try await server.http(.PUT, "/players.json?ns=test", body: JSONValue.object(players).serialized())
            #expect(put.status == 200)
            for field in fields {
                let query = TestServer.query(["orderBy": "\"\(field)\"", "limitToFirst": "1"])
                let answer = try await server.http(.GET, "/players.json" + query + "&ns=test")
                #expect(answer.json == ["p0": players["p0"] ?? .null])
            }
            let lease = try await server.server.databases.lease("test")
            let node = await lease.database.root.child(at: "players")
            lease.release()
            let built = fields.filter { node.hasBuiltIndex(.child(Path($0))) }
            #expect(built == Array(fields.suffix(server.configuration.maxQueryIndexesPerNode)))
        }
    }
}

/// A client that sends faster than its requests are handled is read no faster than that.
@Suite struct ReadBackpressureTests {
    @Test func aClientFloodingRequestsIsReadAsFastAsTheyAreHandledAndAllAreAnswered() async throws {
        // Just over one request: two waiting already pause reading. With 128 KiB, whether the
        // server fell that far behind was the machine's to decide, and once (on PostgreSQL) it
        // did not.
        try await withTestServer(configure: { $0.maxPendingRequestBytes = 16 * 1024 }) { server in
            let client = try await RealtimeTestClient.connect(to: server)
            let value = JSONValue.string(String(repeating: "v", count: 10_000))
            var numbers: [Int] = []
            for index in 0..<2000 {
                numbers.append(try await client.send(.put(path: "flood/\(index % 50)", data: value, hash: nil)))
            }
            for number in numbers {
                #expect(try await client.response(to: number, timeout: .seconds(60)).isOK)
            }
            #expect((server.metric(#"canopy_limit_trips_total{limit="pending_request_bytes"}"#) ?? 0) >= 1)
            #expect(try await client.get("flood/7") == value)
            await client.close()
        }
    }
}
