import CanopyTesting
import Testing
import Transport
import Tree

/// Listens: initial data, message order, fan-out to listeners at, above and below a write.
struct RealtimeListenTests {
    @Test func listenSendsTheDataBeforeOK() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("rooms/a", ["title": "A"])
            let number = try await client.send(.listen(path: "rooms", query: nil, tag: nil, hash: ""))
            let first = try await client.nextMessage()
            #expect(first == .overwrite(path: "rooms", data: ["a": ["title": "A"]], tag: nil))
            let second = try await client.nextMessage()
            guard case .response(number, let status, _) = second else {
                Issue.record("expected the answer to the listen, got \(second)")
                return
            }
            #expect(status == .ok)
        }
    }

    @Test func listenOnAbsentDataSendsNull() async throws {
        try await withClients(1) { _, clients in
            let data = try await clients[0].listen("nothing/here")
            #expect(data == .overwrite(path: "nothing/here", data: .null, tag: nil))
        }
    }

    @Test func writersOwnUpdateArrivesBeforeItsOK() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.listen("doc")
            let put = try await client.send(.put(path: "doc/title", data: "T", hash: nil))
            let first = try await client.nextMessage()
            #expect(first == .overwrite(path: "doc/title", data: "T", tag: nil))
            #expect(try await client.nextMessage().responseNumber == put)

            let merge = try await client.send(.merge(path: "doc", data: ["body": "B"]))
            let update = try await client.nextMessage()
            #expect(update == .merge(path: "doc", data: ["body": "B"], tag: nil))
            #expect(try await client.nextMessage().responseNumber == merge)
        }
    }

    @Test func aWriteReachesListenersAtAboveAndBelowExactlyOnce() async throws {
        try await withClients(5) { _, clients in
            let (writer, above, at, below, elsewhere) = (clients[0], clients[1], clients[2], clients[3], clients[4])
            try await above.listen("a")
            try await at.listen("a/b")
            try await below.listen("a/b/c")
            try await elsewhere.listen("z")

            try await writer.put("a/b", ["c": 1, "d": 2])
            #expect(try await above.nextPush() == .overwrite(path: "a/b", data: ["c": 1, "d": 2], tag: nil))
            #expect(try await at.nextPush() == .overwrite(path: "a/b", data: ["c": 1, "d": 2], tag: nil))
            #expect(try await below.nextPush() == .overwrite(path: "a/b/c", data: 1, tag: nil))

            // The next push each listener gets is for the next write: nothing was sent twice.
            try await writer.put("a/b/c", "second")
            try await writer.put("z", "sentinel")
            #expect(try await above.nextPush() == .overwrite(path: "a/b/c", data: "second", tag: nil))
            #expect(try await at.nextPush() == .overwrite(path: "a/b/c", data: "second", tag: nil))
            #expect(try await below.nextPush() == .overwrite(path: "a/b/c", data: "second", tag: nil))
            #expect(try await elsewhere.nextPush() == .overwrite(path: "z", data: "sentinel", tag: nil))
            #expect(above.pendingMessages.isEmpty && at.pendingMessages.isEmpty && below.pendingMessages.isEmpty)
        }
    }

    @Test func aMergeReachesListenersAtAboveAndBelow() async throws {
        try await withClients(3) { _, clients in
            let (writer, above, below) = (clients[0], clients[1], clients[2])
            try await writer.put("m", ["x": ["y": 1], "keep": true])
            try await above.listen("m")
            try await below.listen("m/x/y")

            try await writer.requestOK(.merge(path: "m", data: ["x/y": 2, "new": "n"]))
            #expect(try await above.nextPush() == .merge(path: "m", data: ["x/y": 2, "new": "n"], tag: nil))
            #expect(try await below.nextPush() == .overwrite(path: "m/x/y", data: 2, tag: nil))
            #expect(try await writer.get("m") == ["x": ["y": 2], "keep": true, "new": "n"])
        }
    }

    /// A push to many connections, spread over the server's event loops, shares one buffer of
    /// frames: each connection still gets every write once, in order, and a writer that listens
    /// gets its update before its answer.
    @Test func manyListenersOfOneLocationGetEveryWriteOnceAndInOrder() async throws {
        let rounds = 12
        try await withClients(24) { _, clients in
            let writer = clients[0]
            for client in clients { try await client.listen("room") }
            for round in 1...rounds {
                let put = try await writer.send(.put(path: "room/n", data: .number(Double(round)), hash: nil))
                let update = try await writer.nextMessage()
                #expect(update == .overwrite(path: "room/n", data: .number(Double(round)), tag: nil))
                #expect(try await writer.nextMessage().responseNumber == put)
            }
            for (index, client) in clients.enumerated().dropFirst() {
                for round in 1...rounds {
                    let push = try await client.nextPush()
                    #expect(
                        push == .overwrite(path: "room/n", data: .number(Double(round)), tag: nil),
                        "listener \(index), write \(round)")
                }
                #expect(client.pendingMessages.isEmpty, "listener \(index) got more than the writes")
            }
        }
    }

    @Test func aWriteThatChangesNothingBelowSendsNothingThere() async throws {
        try await withClients(2) { _, clients in
            let (writer, below) = (clients[0], clients[1])
            try await writer.put("p", ["same": 1, "other": 1])
            try await below.listen("p/same")
            try await writer.put("p", ["same": 1, "other": 2])
            try await writer.put("p/same", 3)
            #expect(try await below.nextPush() == .overwrite(path: "p/same", data: 3, tag: nil))
        }
    }

    @Test func unlistenStopsUpdates() async throws {
        try await withClients(2) { _, clients in
            let (writer, listener) = (clients[0], clients[1])
            try await listener.listen("u")
            try await listener.requestOK(.unlisten(path: "u", query: nil, tag: nil))
            try await writer.put("u", 1)
            try await listener.listen("sentinel")
            try await writer.put("sentinel", 2)
            #expect(try await listener.nextPush() == .overwrite(path: "sentinel", data: 2, tag: nil))
            #expect(listener.pendingMessages.isEmpty, "\(listener.pendingMessages)")
        }
    }

    @Test func closingAConnectionDropsItsListens() async throws {
        try await withTestServer { server in
            let client = try await RealtimeTestClient.connect(to: server)
            try await client.listen("a")
            try await client.listen("b", query: ["i": ".key", "l": 1, "vf": "l"], tag: 1)
            #expect(server.metric("canopy_listeners_active") == 2)
            await client.close()
            #expect(await server.waitForOpenConnections(0))
            #expect(await server.waitForMetric("canopy_listeners_active", toBe: 0))
        }
    }

    @Test func listenWithTheCurrentHashStillAnswersOK() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("h", ["v": 1])
            let hash = try Node(json: ["v": 1]).hash
            let answer = try await client.request(.listen(path: "h", query: nil, tag: nil, hash: hash))
            #expect(answer.status == .ok)
            try await client.put("h/v", 2)
            // The initial data may be skipped (the client has it); the update must come.
            let update = try await client.next { $0 == .overwrite(path: "h/v", data: 2, tag: nil) }
            #expect(update.isDataPush)
        }
    }
}
