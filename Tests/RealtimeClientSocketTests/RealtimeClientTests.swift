import CanopyTesting
import RealtimeClientSocket
import Testing
import Transport
import Tree

/// `RealtimeClient` against a real in-process server over real sockets.
@Suite(.timeLimit(.minutes(2)))
struct RealtimeClientTests {
    @Test func connectsWritesListensAndReceivesPushes() async throws {
        try await withTestServer { server in
            let client = try await RealtimeClient.connect(to: .of(server), logger: clientLogger)
            #expect(!client.hello.sessionID.isEmpty)
            #expect(client.hello.timestamp > 0)
            #expect(client.endReason == nil)
            var messages = client.messages.makeAsyncIterator()

            client.request(1, .put(path: "/a", data: ["b": 1], hash: nil))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)

            client.request(2, .listen(path: "/a", query: nil, tag: nil, hash: nil))
            let listened = await messages.messages(throughAnswerTo: 2)
            #expect(listened.status(of: 2) == .ok)
            #expect(listened.overwrites == [["b": 1]], "the listen's initial data comes before its ok")

            client.request(3, .put(path: "/a/c", data: "x", hash: nil))
            let written = await messages.messages(throughAnswerTo: 3)
            #expect(written.status(of: 3) == .ok)
            #expect(written.overwrites == ["x"], "the write's push to the listen comes before its ok")

            client.request(4, .get(path: "/a", query: nil))
            #expect(await messages.messages(throughAnswerTo: 4).data(of: 4) == ["b": 1, "c": "x"])

            client.close()
            _ = await messages.remaining()
            #expect(client.endReason == .closed("closed by the client"))
            #expect(!client.send(.ping), "a message sent after the end is dropped")
        }
    }

    @Test func sendsAndReceivesMessagesSplitIntoFrames() async throws {
        try await withTestServer { server in
            let client = try await RealtimeClient.connect(to: .of(server), logger: clientLogger)
            var messages = client.messages.makeAsyncIterator()
            let long = JSONValue.string(String(repeating: "ab€", count: 15_000))  // 45,000 characters

            client.request(1, .put(path: "/long", data: long, hash: nil))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)

            client.request(2, .get(path: "/long", query: nil))
            #expect(await messages.messages(throughAnswerTo: 2).data(of: 2) == long)
            client.close()
            _ = await messages.remaining()
        }
    }

    @Test func finishesMessagesWithAReasonWhenTheServerStops() async throws {
        try await withTestServer { server in
            let client = try await RealtimeClient.connect(to: .of(server), logger: clientLogger)
            var messages = client.messages.makeAsyncIterator()
            client.request(1, .listen(path: "/x", query: nil, tag: nil, hash: nil))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)

            await server.stop()
            _ = await messages.remaining()
            guard case .closed(let reason)? = client.endReason else {
                Issue.record("expected .closed, got \(String(describing: client.endReason))")
                return
            }
            #expect(!reason.isEmpty)
            #expect(!client.send(.ping))
        }
    }

    @Test func sendsANewSessionsLastSessionAndConnectsAgain() async throws {
        try await withTestServer { server in
            let first = try await RealtimeClient.connect(to: .of(server), logger: clientLogger)
            first.close()
            for await _ in first.messages {}
            let second = try await RealtimeClient.connect(
                to: .of(server), lastSession: first.hello.sessionID, logger: clientLogger)
            #expect(second.hello.sessionID != first.hello.sessionID)
            second.close()
            for await _ in second.messages {}
        }
    }

    @Test func failsToConnectWhereNothingListens() async throws {
        let reserved = try ReservedPort()
        defer { reserved.release() }
        let port = reserved.port
        let endpoint = RealtimeEndpoint(host: "127.0.0.1", port: port, secure: false, namespace: "test")
        do {
            let client = try await RealtimeClient.connect(to: endpoint, timeout: .seconds(20), logger: clientLogger)
            Issue.record("connected to an unused port: \(client.hello)")
        } catch {
            guard case .connectFailed(let message) = error else {
                Issue.record("expected .connectFailed, got \(error)")
                return
            }
            #expect(message.contains("127.0.0.1:\(port)"), "the message says where: \(message)")
        }
    }

    @Test func timesOutWhenNoHelloComes() async throws {
        let listener = try await SilentListener.start()
        let endpoint = RealtimeEndpoint(host: "127.0.0.1", port: listener.port, secure: false, namespace: "test")
        do {
            let client = try await RealtimeClient.connect(to: endpoint, timeout: .seconds(1), logger: clientLogger)
            Issue.record("connected to a silent listener: \(client.hello)")
        } catch {
            #expect(error == .timedOut(.seconds(1)))
        }
        // The socket is not kept waiting for an upgrade that never comes.
        #expect(await eventually(timeout: .seconds(15)) { listener.acceptedAllClosed })
        await listener.stop()
    }
}
