import CanopyTesting
import NIOCore
import RealtimeClientSocket
import Synchronization
import Testing
import Transport
import Tree

/// `RealtimeSocket`, the raw client connection under the SDK's client, the tests' client,
/// canopy-load and the benchmarks: against a real server and a scripted one.
@Suite(.timeLimit(.minutes(2)))
struct RealtimeSocketTests {
    static let hello = #"{"t":"c","d":{"t":"h","d":{"ts":1700000000000,"v":"5","h":"127.0.0.1:1","s":"session-1"}}}"#

    @Test func sendsWhatItsDelegateQueuesAndPassesFramesOn() async throws {
        try await withTestServer { server in
            // On the hello, the delegate queues two requests at once: both go out in one write.
            let recorder = Recorder { text, output in
                guard text.contains(#""t":"h""#) else { return }
                output.send(Self.request(1, .put(path: "a", data: 1, hash: nil)))
                output.send(Self.request(2, .get(path: "a", query: nil)))
            }
            let socket = try await RealtimeSocket.connect(
                host: "127.0.0.1", port: server.port, target: "/.ws?v=5&ns=test"
            ) { recorder }
            #expect(await eventually(timeout: .seconds(15)) { recorder.answers.count == 2 })
            #expect(recorder.answers == [1: .ok, 2: .ok])
            socket.close()
            try await socket.closeFuture.get()
            #expect(recorder.closeReason == "closed by the client")
        }
    }

    @Test func splitsLongMessagesAndSendsFramesExactlyAsGiven() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello])
        let socket = try await RealtimeSocket.connect(url: "ws://127.0.0.1:\(server.port)/.ws?v=5&ns=test") {
            Recorder()
        }
        let long = String(repeating: "x", count: FrameAssembler.maxFrameCharacters + 1)
        socket.send(long)
        try await socket.send(frames: ["2", "{", "}"]).get()
        #expect(await server.waitForFrame("}"))
        #expect(
            server.receivedFrames == ["2", String(long.prefix(FrameAssembler.maxFrameCharacters)), "x", "2", "{", "}"])
        socket.closeWithoutHandshake()
        await server.stop()
    }

    @Test func answersTheServersCloseFrameAndSaysWhy() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello], closeCode: 4000)
        let recorder = Recorder()
        let socket = try await RealtimeSocket.connect(host: "127.0.0.1", port: server.port, target: "/.ws") {
            recorder
        }
        try await socket.closeFuture.get()
        #expect(recorder.frames == [Self.hello])
        #expect(recorder.closeReason == "the server closed the connection (4000)")
        #expect(await server.waitForFrame("[opcode 8]"), "the close frame was answered")
        await server.stop()
    }

    @Test func endsItsOwnCloseHandshakeWhenTheServerDoesNotAnswer() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello])
        var configuration = RealtimeSocket.Configuration()
        configuration.closeTimeout = .milliseconds(100)
        let recorder = Recorder()
        let socket = try await RealtimeSocket.connect(
            host: "127.0.0.1", port: server.port, target: "/.ws", configuration: configuration
        ) { recorder }
        socket.close()
        try await socket.closeFuture.get()
        #expect(await server.waitForFrame("[opcode 8]"))
        #expect(recorder.closeReason == "closed by the client")
        await server.stop()
    }

    @Test func refusesAnUpgradeWithoutTheRightAcceptValue() async throws {
        let server = try await ScriptedWebSocketServer.start(
            sending: [],
            upgrade: .respond(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: bm90IHRoZSBvbmU=\r\n\r\n"))
        do {
            _ = try await RealtimeSocket.connect(host: "127.0.0.1", port: server.port, target: "/.ws") { Recorder() }
            Issue.record("connected despite a wrong Sec-WebSocket-Accept")
        } catch RealtimeSocketError.notUpgraded(let url, let cause) {
            #expect(url == "ws://127.0.0.1:\(server.port)/.ws")
            guard case .missingHeader(let name, _)? = cause as? ResponseHeadError else {
                Issue.record("refused for another reason: \(cause)")
                return
            }
            #expect(name == "Sec-WebSocket-Accept")
        }
        await server.stop()
    }

    @Test func givesUpOnAServerThatNeverAnswersTheUpgrade() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [], upgrade: .silence)
        var configuration = RealtimeSocket.Configuration()
        configuration.upgradeTimeout = .milliseconds(200)
        do {
            _ = try await RealtimeSocket.connect(
                host: "127.0.0.1", port: server.port, target: "/.ws", configuration: configuration
            ) { Recorder() }
            Issue.record("connected to a server that never answered")
        } catch RealtimeSocketError.notUpgraded(_, let cause) {
            #expect(cause as? ResponseHeadError == .noHeadWithin(.milliseconds(200)))
        }
        await server.stop()
    }

    @Test func failsToConnectWhereNothingListens() async throws {
        let reserved = try ReservedPort()
        defer { reserved.release() }
        do {
            _ = try await RealtimeSocket.connect(host: "127.0.0.1", port: reserved.port, target: "/.ws") { Recorder() }
            Issue.record("connected where nothing listens")
        } catch RealtimeSocketError.cannotConnect(let address, _) {
            #expect(address == "127.0.0.1:\(reserved.port)")
        }
    }

    @Test func holdsTheConnectBackUntilItsDelegateIsReady() async throws {
        let server = try await ScriptedWebSocketServer.start(sending: [Self.hello])
        // Ready at the hello: connect returns once it came.
        let greeted = Recorder(readyAtHello: .success(()))
        _ = try await RealtimeSocket.connect(host: "127.0.0.1", port: server.port, target: "/.ws") { greeted }
        #expect(greeted.frames == [Self.hello])

        // Refusing at the hello: connect throws the delegate's error.
        let refusing = Recorder(readyAtHello: .failure(Refusal()))
        await #expect(throws: Refusal.self) {
            _ = try await RealtimeSocket.connect(host: "127.0.0.1", port: server.port, target: "/.ws") { refusing }
        }
        await server.stop()

        // Never ready, and the server closes the connection: connect says it ended first.
        let closing = try await ScriptedWebSocketServer.start(sending: [], closeCode: 1001)
        let waiting = Recorder(readyAtHello: .success(()))
        do {
            _ = try await RealtimeSocket.connect(host: "127.0.0.1", port: closing.port, target: "/.ws") { waiting }
            Issue.record("connected although the delegate was never ready")
        } catch RealtimeSocketError.endedBeforeReady {
            #expect(waiting.closeReason == "the server closed the connection (1001)")
        }
        await closing.stop()
    }

    static func request(_ number: Int, _ action: ClientAction) -> String {
        ClientMessage.request(ClientRequest(number: number, action: action)).json.serialized()
    }
}

private struct Refusal: Error {}

/// A delegate that records what it gets; `respond` may queue messages for each text frame, and
/// `readyAtHello` makes it hold the connect back until a hello comes.
private final class Recorder: RealtimeSocketDelegate, Sendable {
    private struct State {
        var frames: [String] = []
        var answers: [Int: ResponseStatus] = [:]
        var closeReason: String?
        var ready: EventLoopPromise<Void>?
    }

    private let state = Mutex(State())
    private let respond: @Sendable (String, inout RealtimeSocketOutput) -> Void
    private let readyAtHello: Result<Void, Refusal>?

    init(
        readyAtHello: Result<Void, Refusal>? = nil,
        respond: @escaping @Sendable (String, inout RealtimeSocketOutput) -> Void = { _, _ in }
    ) {
        self.readyAtHello = readyAtHello
        self.respond = respond
    }

    var frames: [String] { state.withLock { $0.frames } }
    var answers: [Int: ResponseStatus] { state.withLock { $0.answers } }
    var closeReason: String? { state.withLock { $0.closeReason } }

    func holdsConnect(until ready: EventLoopPromise<Void>) -> Bool {
        guard readyAtHello != nil else { return false }
        state.withLock { $0.ready = ready }
        return true
    }

    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        let text = String(buffer: frame)
        let ready = state.withLock { state in
            state.frames.append(text)
            if let json = try? JSONValue(parsing: text),
                case .response(let number, let status, _)? =
                    try? ServerMessage(json: json)
            {
                state.answers[number] = status
            }
            return state.ready
        }
        if let ready, text.contains(#""t":"h""#), let readyAtHello {
            ready.completeWith(readyAtHello.mapError { $0 as any Error })
        }
        respond(text, &output)
    }

    func closed(_ reason: RealtimeSocketCloseReason) {
        state.withLock { $0.closeReason = "\(reason)" }
    }
}
