import CanopyTesting
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Presence
import ServerStorage
import Synchronization
import Testing
import Transport
import Tree

@testable import CanopyServer

/// Seeded property tests of the realtime and REST request parsers: generated inputs, valid,
/// invalid and randomly mutated, go through the server's own code. Nothing crashes, every valid
/// input is accepted, every invalid one refused, nothing invalid is stored, and the database file
/// loads back to exactly what memory held.
///
/// Most inputs go straight into the server's request handling (the realtime message parser and the
/// database's write steps; the REST responder) to fit a million in CI's time; a smaller share goes
/// over real sockets to a running server, which is then restarted.
@Suite(.serialized)
struct RequestFuzzTests {
    static let realtimeCount = 800_000
    static let restCount = 200_000

    @Test(.timeLimit(.minutes(20)))
    func generatedRealtimeRequestsNeverStoreInvalidData() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/fuzz.sqlite"
        let logger = TestServer.makeLogger()
        let store = try SQLiteServerStore(path: file, durability: .normal, logger: logger)
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        let database = try Database(
            name: "fuzz", store: store, commits: queue, metrics: ServerMetrics(), logger: logger)
        let tally = Tally()
        await database.set(.root, json: RequestGenerator.initialData, as: .admin) {
            tally.record(.accepted, "initial data", $0.status)
        }

        var generator = RequestGenerator(seed: 0x00C4_A90B)
        var operations: [DisconnectOperation] = []
        for _ in 0..<(Self.realtimeCount / 500) {
            var writes: [DatabaseWrite] = []
            for _ in 0..<500 {
                let input = generator.realtimeMessage()
                let message: ClientMessage
                do {
                    message = try ClientMessage(parsing: input.text)
                } catch {
                    tally.record(input.verdict, input.family, "malformed message", text: input.text)
                    continue
                }
                guard case .request(let request) = message else {
                    tally.record(input.verdict, input.family, "control message", text: input.text)
                    continue
                }
                let answer: @Sendable (WriteOutcome) -> Void = {
                    tally.record(input.verdict, input.family, $0.status, text: input.text)
                }
                if let write = RealtimeSession.write(for: request.action, as: .unauthenticated, answer: answer) {
                    writes.append(write)
                } else if let registered = RealtimeSession.disconnectOperation(for: request.action) {
                    switch registered {
                    case .success(let operation):
                        operations.append(operation)
                        tally.record(input.verdict, input.family, "ok", text: input.text)
                    case .failure(let error):
                        tally.record(input.verdict, input.family, error.status.text, text: input.text)
                    }
                } else {
                    tally.record(input.verdict, input.family, "other action \(request.action.name)", text: input.text)
                }
            }
            await database.perform(writes)
            // Neither the generator nor the database suspends: without this the loop holds one of
            // the cooperative pool's threads (on 2 cores, half of it) for its whole run.
            await Task.yield()
        }
        // What the registered onDisconnect operations write, run as the server runs them.
        await database.run(DisconnectRecord(operations: operations, identity: .unauthenticated), session: nil)
        let deadline = ContinuousClock.now + .seconds(120)
        // Every input is answered once, and so is the initial write.
        while tally.answered < Self.realtimeCount + 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let memory = await database.root
        queue.finish()
        await committer.value

        tally.expectVerdictsHeld(inputs: Self.realtimeCount, answered: Self.realtimeCount + 1)
        Self.expectValid(memory)
        try Self.expectLoads(file, as: memory)
    }

    @Test(.timeLimit(.minutes(20)))
    func generatedRESTRequestsNeverStoreInvalidData() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = TestServer.defaultConfiguration(dataDirectory: folder)
        configuration.fsync = false
        let logger = TestServer.makeLogger()
        let server = CanopyServer(configuration: configuration, logger: logger)
        let router = server.makeRouter()
        let channel = NIOAsyncTestingChannel()
        let context = ServerRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let tally = Tally()

        func send(_ method: HTTPRequest.Method, _ target: String, body: String) async -> Int {
            let head = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: target)
            let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(string: body)))
            do {
                return Int(try await router.respond(to: request, context: context).status.code)
            } catch {
                return -1
            }
        }
        let initial = await send(.put, "/.json?ns=fuzz", body: RequestGenerator.initialData.serialized())
        #expect(initial == 200)

        var generator = RequestGenerator(seed: 0x0F0F_2026)
        for index in 0..<Self.restCount {
            // As in the realtime test: a loop that never suspends would hold a pool thread throughout.
            if index % 100 == 0 { await Task.yield() }
            let input = generator.restRequest()
            let status = await send(HTTPRequest.Method(input.method.rawValue) ?? .get, input.target, body: input.body)
            let outcome: String
            switch status {
            case 200, 204: outcome = "ok"
            case 400, 404, 405, 412, 413: outcome = "refused \(status)"
            default: outcome = "unexpected status \(status)"
            }
            tally.record(input.verdict, input.family, outcome, text: "\(input.method) \(input.target) \(input.body)")
        }
        let lease = try await server.databases.lease("fuzz")
        let memory = await lease.database.root
        lease.release()
        await server.databases.shutdown()

        tally.expectVerdictsHeld(inputs: Self.restCount, answered: Self.restCount)
        Self.expectValid(memory)
        try Self.expectLoads(folder + "/fuzz.sqlite", as: memory)
        try await channel.close()
    }

    /// The same generators over real sockets: realtime messages pipelined on one connection and
    /// REST requests, then a restart that must load the namespace as it was.
    @Test(.timeLimit(.minutes(10)))
    func generatedRequestsOverTheWireAndARestart() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var stored: JSONValue?
        try await withTestServer(dataDirectory: folder) { server in
            let put = try await server.http(.PUT, "/.json?ns=fuzz", body: RequestGenerator.initialData.serialized())
            #expect(put.status == 200)
            var generator = RequestGenerator(seed: 0x5EED_0001)
            var client = try await RealtimeTestClient.connect(to: server, namespace: "fuzz")
            var reconnections = 0
            for sent in 1...4000 {
                let input = generator.realtimeMessage()
                var answered = (try? await client.sendRaw(input.text)) != nil
                if answered, sent % 250 == 0 {
                    // Everything sent so far was answered, or the server closed the connection for it.
                    if let marker = try? await client.send(.get(path: "fuzz/v/seed", query: nil)) {
                        answered = (try? await client.response(to: marker, timeout: .seconds(5))) != nil
                    } else {
                        answered = false
                    }
                }
                if !answered {
                    await client.close()
                    client = try await RealtimeTestClient.connect(to: server, namespace: "fuzz")
                    reconnections += 1
                }
            }
            await client.close()
            #expect(reconnections < 400, "the server closed \(reconnections) connections")
            var sentOverHTTP = 0
            for _ in 0..<1000 {
                let input = generator.restRequest()
                let method = TestHTTPMethod(rawValue: input.method.rawValue) ?? .GET
                // Targets the HTTP client itself cannot send are skipped.
                guard URL(string: server.baseURL + input.target) != nil,
                    let response = try? await server.http(method, input.target, body: method == .GET ? nil : input.body)
                else { continue }
                sentOverHTTP += 1
                #expect(response.status < 500, "\(input.family): \(input.target) \(input.body) → \(response.status)")
            }
            #expect(sentOverHTTP > 500)
            let read = try await server.http(.GET, "/.json?ns=fuzz&format=export")
            #expect(read.status == 200)
            stored = read.json
        }
        try await withTestServer(dataDirectory: folder) { server in
            let read = try await server.http(.GET, "/.json?ns=fuzz&format=export")
            #expect(read.status == 200, "the namespace does not load after a restart: \(read.body)")
            #expect(read.json == stored)
        }
        #expect(try SQLiteServerStore(path: folder + "/fuzz.sqlite").quarantinedRows().isEmpty)
    }

    // MARK: Checks

    /// Every key valid, every number finite, every string within the limit, no deeper than allowed.
    static func expectValid(_ node: Node, depth: Int = 0, path: String = "") {
        if depth > TreeLimits.maxDepth { Issue.record("\(path) is \(depth) levels deep") }
        if case .number(let value)? = node.priority?.leafValue, !value.isFinite {
            Issue.record("\(path) has priority \(value)")
        }
        switch node.leafValue {
        case .number(let value)?:
            if !value.isFinite { Issue.record("\(path) holds \(value)") }
        case .string(let value)?:
            if value.utf8.count > TreeLimits.maxStringBytes { Issue.record("\(path) holds an oversize string") }
        default:
            for (key, child) in node.children {
                if let problem = ChildKey.problem(with: key.string) { Issue.record("\(path)/\(key.string) \(problem)") }
                expectValid(child, depth: depth + 1, path: path + "/" + key.string)
            }
        }
    }

    /// The database file loads back to exactly `memory`, with nothing set aside.
    static func expectLoads(_ file: String, as memory: Node) throws {
        let reopened = try SQLiteServerStore(path: file)
        let loaded = try reopened.loadTree()
        #expect(loaded == memory, "the file does not load to what memory held")
        #expect(try reopened.quarantinedRows().isEmpty)
    }
}

extension WriteOutcome {
    /// `ok`, `datastale`, or the refusal's status.
    var status: String {
        switch self {
        case .ok: "ok"
        case .datastale: "datastale"
        case .rejected(let error): error.status.text
        }
    }
}

/// Outcomes by family, and the inputs whose outcome broke their verdict.
final class Tally: Sendable {
    private struct State {
        var outcomes: [String: [String: Int]] = [:]
        var broken: [String] = []
        var answered = 0
    }

    private let state = Mutex(State())

    func record(_ verdict: Verdict, _ family: String, _ outcome: String, text: String = "") {
        let refused = outcome != "ok"
        let holds =
            switch verdict {
            case .accepted: !refused
            case .refused: refused && !outcome.hasPrefix("unexpected")
            case .either: !outcome.hasPrefix("unexpected")
            }
        state.withLock { state in
            state.answered += 1
            state.outcomes[family, default: [:]][outcome, default: 0] += 1
            if !holds, state.broken.count < 20 {
                state.broken.append("\(family) (\(verdict.rawValue)) got \(outcome): \(text.prefix(300))")
            }
        }
    }

    var answered: Int { state.withLock { $0.answered } }

    /// Checks that every verdict held and that both valid and invalid inputs were generated.
    func expectVerdictsHeld(inputs: Int, answered expectedAnswers: Int? = nil) {
        let (outcomes, broken, answered) = state.withLock { ($0.outcomes, $0.broken, $0.answered) }
        #expect(broken.isEmpty, "verdicts broken:\n\(broken.joined(separator: "\n"))")
        let accepted = outcomes.values.reduce(0) { $0 + ($1["ok"] ?? 0) }
        #expect(accepted > inputs / 5, "only \(accepted) of \(inputs) inputs were accepted: \(outcomes)")
        #expect(answered - accepted > inputs / 5, "only \(answered - accepted) inputs were refused: \(outcomes)")
        if let expectedAnswers { #expect(answered >= expectedAnswers) }
    }
}
