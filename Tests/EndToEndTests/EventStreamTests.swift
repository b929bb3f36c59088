import CanopyServer
import CanopyTesting
import Testing
import Tree

/// REST event streams (Server-Sent Events).
struct EventStreamTests {
    @Test func streamStartsWithAPutOfTheWholeValue() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/rooms.json", body: #"{"a":{"title":"A"},"b":{"title":"B"}}"#)
            let stream = try await server.eventStream("/rooms.json")
            #expect(stream.status == 200)
            #expect(stream.header("Content-Type") == "text/event-stream; charset=utf-8")
            let first = try await stream.next()
            #expect(first.name == "put")
            #expect(first.json == ["path": "/", "data": ["a": ["title": "A"], "b": ["title": "B"]]])
            #expect(server.openConnections == 1)
            await stream.close()
            // The server notices the client went away and drops the stream and its listener.
            #expect(await server.waitForOpenConnections(0))
            #expect(await server.waitForMetric("canopy_listeners_active", toBe: 0))
        }
    }

    /// Clients that leave, after their first event or right after asking, take their stream and
    /// listener with them at once: nothing waits for a keep-alive write to fail (here 10 minutes
    /// away), and the metrics come back to where they were.
    @Test func streamsWhoseClientsLeaveAreRemovedAtOnce() async throws {
        try await withTestServer { configuration in
            configuration.sseKeepaliveInterval = .seconds(600)
        } _: { server in
            // Five read their first event (the response has started), then leave (the shared HTTP
            // client keeps at most eight connections to a host).
            var streams: [EventStreamReader] = []
            for _ in 0..<5 {
                let stream = try await server.eventStream("/rooms.json")
                #expect(try await stream.next().name == "put")
                streams.append(stream)
            }
            #expect(server.openConnections == 5)
            for stream in streams { await stream.close() }
            // Twenty leave right after asking.
            let request = "GET /rooms.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
            try await withThrowingTaskGroup(of: RawHTTPExchange.self) { group in
                for _ in 0..<20 { group.addTask { try await server.exchangeRaw(request, timeout: .zero) } }
                for try await _ in group {}
            }
            #expect(await server.waitForOpenConnections(0))
            #expect(await server.waitForMetric("canopy_listeners_active", toBe: 0))
            // The server still serves.
            #expect(try await server.http(.GET, "/rooms.json").status == 200)
        }
    }

    @Test func streamOnAbsentDataStartsWithNull() async throws {
        try await withTestServer { server in
            let stream = try await server.eventStream("/empty.json")
            let first = try await stream.next()
            #expect(first.name == "put")
            #expect(first.json == ["path": "/", "data": nil])
            await stream.close()
        }
    }

    @Test func writesBecomePutAndPatchEventsRelativeToTheLocation() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/rooms.json", body: #"{"a":{"title":"A"}}"#)
            let stream = try await server.eventStream("/rooms.json")
            _ = try await stream.nextData()

            _ = try await server.http(.PUT, "/rooms/b.json", body: #"{"title":"B"}"#)
            let put = try await stream.nextData()
            #expect(put.name == "put")
            #expect(put.json == ["path": "/b", "data": ["title": "B"]])

            _ = try await server.http(.PATCH, "/rooms.json", body: #"{"a/title":"A2","c":1}"#)
            let patch = try await stream.nextData()
            #expect(patch.name == "patch")
            #expect(patch.json == ["path": "/", "data": ["a/title": "A2", "c": 1]])

            _ = try await server.http(.DELETE, "/rooms/b.json")
            #expect(try await stream.nextData().json == ["path": "/b", "data": nil])

            // A write above the location arrives as a put of the location's new value.
            _ = try await server.http(.PUT, "/.json", body: #"{"rooms":{"z":true},"other":1}"#)
            #expect(try await stream.nextData().json == ["path": "/", "data": ["z": true]])

            // Realtime writes reach event streams too.
            let client = try await RealtimeTestClient.connect(
                to: server, namespace: server.configuration.defaultNamespace)
            try await client.put("rooms/z", false)
            #expect(try await stream.nextData().json == ["path": "/z", "data": false])
            await client.close()

            // A write elsewhere sends nothing: the next event is for the next write here.
            _ = try await server.http(.PUT, "/other.json", body: "2")
            _ = try await server.http(.PUT, "/rooms/y.json", body: "3")
            #expect(try await stream.nextData().json == ["path": "/y", "data": 3])
            await stream.close()
        }
    }

    /// A stream with nothing to say still gets `keep-alive` events (every second with the test
    /// servers' setting). No timing is asserted: a busy CI machine once kept two of them from
    /// arriving within 10 s.
    @Test func aQuietStreamGetsKeepAliveEvents() async throws {
        try await withTestServer { server in
            let stream = try await server.eventStream("/quiet.json")
            _ = try await stream.next()
            let first = try await stream.next(timeout: .seconds(30)) { $0.name == "keep-alive" }
            #expect(first.data == "null")
            let second = try await stream.next(timeout: .seconds(30)) { $0.name == "keep-alive" }
            #expect(second.data == "null")
            await stream.close()
        }
    }

    @Test func aQueryStreamSendsItsWindow() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/s.json", body: #"{"a":1,"b":2,"c":3}"#)
            let stream = try await server.eventStream(
                "/s.json" + TestServer.query(["orderBy": "\"$value\"", "limitToLast": "2"]))
            let first = try await stream.next()
            #expect(first.json == ["path": "/", "data": ["b": 2, "c": 3]])
            await stream.close()
        }
    }

    @Test func aStreamWithoutOrderByForRangeIsRefused() async throws {
        try await withTestServer { server in
            let stream = try await server.eventStream("/s.json?limitToFirst=1")
            #expect(stream.status == 400)
            await stream.close()
        }
    }
}
