import RealtimeClientSocket
import Testing
import Transport
import Tree

/// `RealtimeClient` against a scripted WebSocket server, for what a real server rarely does.
@Suite(.timeLimit(.minutes(2)))
struct RealtimeClientScriptedTests {
    static let hello = #"{"t":"c","d":{"t":"h","d":{"ts":1700000000000,"v":"5","h":"127.0.0.1:1","s":"session-1"}}}"#
    static let push = #"{"t":"d","d":{"a":"d","b":{"p":"a","d":1}}}"#

    private func connect(
        to server: ScriptedWebSocketServer, keepalive: Duration = .seconds(45)
    ) async throws(RealtimeClientError)
        -> RealtimeClient
    {
        try await RealtimeClient.connect(
            to: RealtimeEndpoint(host: "127.0.0.1", port: server.port, secure: false, namespace: "test"),
            keepaliveInterval: keepalive, logger: clientLogger)
    }

    @Test func passesMessagesOnAndEndsOnShutdown() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [
            Self.hello, Self.push, #"{"t":"c","d":{"t":"s","d":"going away"}}"#, Self.push,
        ])
        let client = try await connect(to: server)
        #expect(
            client.hello == RealtimeHello(timestamp: 1_700_000_000_000, host: "127.0.0.1:1", sessionID: "session-1"))
        var messages: [ServerMessage] = []
        for await message in client.messages { messages.append(message) }
        #expect(messages == [.overwrite(path: "a", data: 1, tag: nil)], "nothing after the shutdown is passed on")
        #expect(client.endReason == .closed("shutdown: going away"))
        await server.stop()
    }

    /// A server that does not serve the namespace sends the protocol's redirect instead of a hello
    /// (Firebase's do, and Canopy's in a cluster): connecting reports where to go.
    @Test func aRedirectInsteadOfTheHelloTellsWhereToConnect() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [#"{"t":"c","d":{"t":"r","d":"s-node2:9001"}}"#])
        await #expect(throws: RealtimeClientError.redirected(host: "s-node2:9001")) {
            _ = try await connect(to: server)
        }
        await server.stop()
    }

    @Test func assemblesCountedFramesAndSkipsKeepalives() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [
            Self.hello, "0", "3", #"{"t":"d","d":{"a":"d","#, #""b":{"p":"a","d""#, #":2}}}"#, "0", Self.push,
        ])
        let client = try await connect(to: server)
        var messages = client.messages.makeAsyncIterator()
        #expect(await messages.next() == .overwrite(path: "a", data: 2, tag: nil))
        #expect(await messages.next() == .overwrite(path: "a", data: 1, tag: nil))
        client.close()
        await server.stop()
    }

    @Test func endsTheConnectionOnAMalformedMessage() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello, Self.push, "{not json", Self.push])
        let client = try await connect(to: server)
        var messages: [ServerMessage] = []
        for await message in client.messages { messages.append(message) }
        #expect(messages == [.overwrite(path: "a", data: 1, tag: nil)])
        guard case .closed(let reason)? = client.endReason else {
            Issue.record("expected .closed, got \(String(describing: client.endReason))")
            return
        }
        #expect(reason.hasPrefix("malformed message"), "\(reason)")
        await server.stop()
    }

    @Test func refusesAConnectionWhoseFirstMessageIsNotAHello() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.push])
        do {
            let client = try await connect(to: server)
            Issue.record("connected without a hello: \(client.hello)")
        } catch {
            guard case .connectFailed(let message) = error else {
                Issue.record("expected .connectFailed, got \(error)")
                return
            }
            #expect(message.contains("expected a hello"), "\(message)")
        }
        await server.stop()
    }

    @Test func sendsKeepalivesWhenIdleAndSplitsLongMessages() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello])
        let client = try await connect(to: server, keepalive: .milliseconds(100))
        #expect(await server.waitForFrame("0"), "a keepalive \"0\" after 100 ms without sending")

        let long = String(repeating: "x", count: 20_000)
        #expect(
            client.send(.request(ClientRequest(number: 1, action: .put(path: "/a", data: .string(long), hash: nil)))))
        let text = ClientMessage.request(
            ClientRequest(number: 1, action: .put(path: "/a", data: .string(long), hash: nil))
        )
        .json.serialized()
        let expected = FrameAssembler.frames(for: text)
        #expect(expected.count == 3)
        #expect(await server.waitForFrame(expected[2]))
        let frames = server.receivedFrames.filter { $0 != "0" }
        #expect(Array(frames.prefix(3)) == expected, "the count frame, then the pieces, back to back")
        client.close()
        await server.stop()
    }
}
