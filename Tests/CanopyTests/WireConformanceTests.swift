import CanopyTesting
import Foundation
import RealtimeClientSocket
import Synchronization
import Testing
import Transport
import Tree

@testable import Canopy

/// A connection the test plays the server on: it records what the SDK sends and delivers what the
/// test says.
final class ScriptedLink: ServerLink {
    let hello: RealtimeHello
    let messages: AsyncStream<ServerMessage>
    private let continuation: AsyncStream<ServerMessage>.Continuation
    private let sentMessages = Mutex<[ClientMessage]>([])

    /// `host`: what the hello names, as a server names the host it was reached at.
    init(session: String, host: String, extensions: Set<String> = []) {
        hello = RealtimeHello(
            timestamp: Int64(Date().timeIntervalSince1970 * 1000), host: host, sessionID: session,
            extensions: extensions)
        (messages, continuation) = AsyncStream.makeStream()
    }

    func send(_ message: ClientMessage) -> Bool {
        sentMessages.withLock { $0.append(message) }
        return true
    }

    func close() { continuation.finish() }

    func deliver(_ message: ServerMessage) { continuation.yield(message) }

    var sent: [ClientMessage] { sentMessages.withLock { $0 } }

    /// The requests sent, as `action path`.
    var requests: [String] {
        sent.compactMap { message in
            guard case .request(let request) = message else { return nil }
            return "\(request.action.name) \(Self.path(of: request.action))"
        }
    }

    func request(_ index: Int) -> ClientRequest? {
        let requests = sent.compactMap { message -> ClientRequest? in
            if case .request(let request) = message { return request }
            return nil
        }
        return index < requests.count ? requests[index] : nil
    }

    static func path(of action: ClientAction) -> String {
        switch action {
        case .listen(let path, _, _, _), .unlisten(let path, _, _), .put(let path, _, _), .merge(let path, _),
            .onDisconnectPut(let path, _), .onDisconnectMerge(let path, _), .onDisconnectCancel(let path),
            .get(let path, _):
            path
        default: ""
        }
    }
}

/// Hands out scripted connections when the test opens the gate, and records which session each
/// connection attempt named.
final class ScriptedServer: Sendable {
    private struct State {
        var links: [ScriptedLink] = []
        var allowed = 0
        var lastSessions: [String?] = []
        var endpoints: [RealtimeEndpoint] = []
        var unreachableHosts: Set<String> = []
    }

    private let state = Mutex(State())
    /// What the scripted hellos advertise.
    let extensions: Set<String>

    init(extensions: Set<String> = []) { self.extensions = extensions }

    var connector: Connector {
        { [self] endpoint, lastSession in
            let unreachable = state.withLock { state in
                state.endpoints.append(endpoint)
                return state.unreachableHosts.contains(endpoint.host)
            }
            if unreachable { throw RealtimeClientError.connectFailed("\(endpoint.host) is unreachable") }
            while true {
                let link: ScriptedLink? = state.withLock { state in
                    guard state.links.count < state.allowed else { return nil }
                    let link = ScriptedLink(
                        session: "session-\(state.links.count + 1)", host: "\(endpoint.host):\(endpoint.port)",
                        extensions: extensions)
                    state.links.append(link)
                    state.lastSessions.append(lastSession)
                    return link
                }
                if let link { return link }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    func allowConnection() { state.withLock { $0.allowed += 1 } }

    var links: [ScriptedLink] { state.withLock { $0.links } }
    var lastSessions: [String?] { state.withLock { $0.lastSessions } }
    /// Where every connection attempt went, in order.
    var endpoints: [RealtimeEndpoint] { state.withLock { $0.endpoints } }

    func makeUnreachable(_ host: String) { state.withLock { _ = $0.unreachableHosts.insert(host) } }

    func waitForLink(_ count: Int) async -> ScriptedLink? {
        guard await eventually(timeout: .seconds(15), interval: .milliseconds(5), { self.links.count >= count }) else {
            return nil
        }
        return links[count - 1]
    }
}

/// What the SDK sends, checked against PROTOCOL.md and CLIENT.md §3, so it works against any
/// server that speaks Firebase's protocol.
@Suite(.timeLimit(.minutes(1)))
struct WireConformanceTests {
    /// What an app does before the first connection: listens, writes, an onDisconnect. (The
    /// fire-and-forget forms, as app code outside `async` functions calls them.)
    static func listenAndWrite(_ database: Database) {
        database.reference(withPath: "a").observe(.value) { _ in }
        database.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2).observe(.childAdded) { _ in
        }
        database.reference(withPath: "a/x").setValue(1)
        database.reference(withPath: "b").updateChildValues(["c": 2, "d/e": ["f": true]])
        database.reference(withPath: "c").setValue("last", andPriority: 5)
        database.reference(withPath: "presence").onDisconnectSetValue(ServerValue.timestamp())
    }

    static func write(_ count: Int, to database: Database) {
        for index in 0..<count { database.reference(withPath: "w/\(index)").setValue(index) }
    }

    static func waitFor(_ link: ScriptedLink, count: Int) async -> Bool {
        await eventually(timeout: .seconds(10), interval: .milliseconds(5)) { link.requests.count >= count }
    }

    @Test func onConnectStatsComeFirstThenListensWritesAndOnDisconnectsInOrder() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        Self.listenAndWrite(database)
        try await Task.sleep(for: .milliseconds(50))

        server.allowConnection()
        let link = try #require(await server.waitForLink(1))
        #expect(await Self.waitFor(link, count: 7), "\(link.requests)")
        #expect(link.requests == ["s ", "q a", "q scores", "p a/x", "m b", "p c", "o presence"])

        // Listens carry the hash of cached data ("" for none); the filtered one its query and tag.
        guard case .listen(_, let plainQuery, let plainTag, let plainHash)? = link.request(1)?.action,
            case .listen(_, let query, let tag, let hash)? = link.request(2)?.action
        else {
            Issue.record("not listens: \(link.requests)")
            return
        }
        #expect(plainQuery == nil && plainTag == nil && plainHash == "")
        #expect(query == ["i": ".value", "l": 2, "vf": "r"])
        #expect(tag != nil && hash == "")
        // Writes carry the app's data; priorities and server values in their wire form.
        guard case .put(_, let data, nil)? = link.request(5)?.action,
            case .merge(_, let members)? = link.request(4)?.action,
            case .onDisconnectPut(_, let onDisconnect)? = link.request(6)?.action
        else {
            Issue.record("not writes: \(link.requests)")
            return
        }
        #expect(data == [".value": "last", ".priority": 5])
        #expect(members == ["c": 2, "d/e": ["f": true]])
        #expect(onDisconnect == [".sv": "timestamp"])
        // Write ids are an extension the server must offer; other servers never see one.
        #expect((0..<7).allSatisfy { link.request($0)?.writeID == nil })
    }

    @Test func aReconnectNamesTheLastSessionAndResendsUnacknowledgedWritesInOrder() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        server.allowConnection()
        database.reference(withPath: "l").observe(.value) { _ in }
        let first = try #require(await server.waitForLink(1))
        Self.write(3, to: database)
        #expect(await Self.waitFor(first, count: 5))
        // The server acknowledges the first write only, then the connection drops.
        let firstWrite = try #require(first.request(2))
        first.deliver(.response(number: firstWrite.number, status: .ok, data: ""))
        try await Task.sleep(for: .milliseconds(50))
        first.close()

        server.allowConnection()
        let second = try #require(await server.waitForLink(2))
        #expect(await Self.waitFor(second, count: 4), "\(second.requests)")
        #expect(second.requests == ["s ", "q l", "p w/1", "p w/2"])
        #expect(server.lastSessions == [nil, "session-1"])
    }

    @Test func aMalformedServerMessageResetsTheConnectionAndTheAppCarriesOn() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        server.allowConnection()
        let values = Recorder<String>()
        database.reference(withPath: "m").observe(.value) { values.record("\($0.value.map { "\($0)" } ?? "nil")") }
        let first = try #require(await server.waitForLink(1))
        #expect(await Self.waitFor(first, count: 2))
        first.deliver(.overwrite(path: "m", data: ["bad.key": 1], tag: nil))
        server.allowConnection()
        let second = try #require(await server.waitForLink(2))
        #expect(await Self.waitFor(second, count: 2), "the client reconnected and listened again: \(second.requests)")
        second.deliver(.overwrite(path: "m", data: 7, tag: nil))
        #expect(await values.wait { $0.last == "7" }, "\(values.all)")
    }

    @Test func anOnDisconnectRequestCutOffByALostConnectionIsSentAgainAndCompletes() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        server.allowConnection()
        let completed = Recorder<String>()
        database.reference(withPath: "p").onDisconnectSetValue("gone") { error, _ in
            completed.record(error.map { "\($0)" } ?? "ok")
        }
        let first = try #require(await server.waitForLink(1))
        #expect(await Self.waitFor(first, count: 2), "\(first.requests)")
        first.close()
        server.allowConnection()
        let second = try #require(await server.waitForLink(2))
        #expect(await Self.waitFor(second, count: 2), "\(second.requests)")
        #expect(second.requests == ["s ", "o p"])
        let request = try #require(second.request(1))
        second.deliver(.response(number: request.number, status: .ok, data: ""))
        #expect(await completed.wait { $0 == ["ok"] }, "\(completed.all)")
    }

    @Test func withWriteIDsResentWritesAndTransactionPutsKeepTheirIDsInTheirFirstOrder() async throws {
        let server = ScriptedServer(extensions: [RealtimeHello.writeIDsExtension])
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        server.allowConnection()
        let outcomes = Recorder<String>()
        database.reference(withPath: "w/0").setValue(0) { error, _ in outcomes.record("w0 \(error == nil)") }
        database.reference(withPath: "t").runTransactionBlock { data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return .success(withValue: data)
        } andCompletionBlock: { error, committed, _ in
            outcomes.record("t \(error == nil) \(committed)")
        }
        database.reference(withPath: "w/1").setValue(1) { error, _ in outcomes.record("w1 \(error == nil)") }
        let first = try #require(await server.waitForLink(1))
        // stats, the transaction's listen, three writes
        #expect(await Self.waitFor(first, count: 5), "\(first.requests)")
        let sentFirst = first.sent.compactMap { message -> ClientRequest? in
            guard case .request(let request) = message, request.writeID != nil else { return nil }
            return request
        }
        #expect(Set(sentFirst.map { ScriptedLink.path(of: $0.action) }) == ["w/0", "t", "w/1"])
        let ids = sentFirst.compactMap(\.writeID)
        #expect(ids.count == 3 && Set(ids.map(\.client)).count == 1)
        #expect(ids.map(\.sequence) == ids.map(\.sequence).sorted() && Set(ids).count == 3)
        first.close()

        // The answers were lost with the connection: the same requests go again, in the same order
        // and under the same ids (the transaction is not run again on other data).
        server.allowConnection()
        let second = try #require(await server.waitForLink(2))
        #expect(await Self.waitFor(second, count: 5), "\(second.requests)")
        let resent = second.sent.compactMap { message -> ClientRequest? in
            guard case .request(let request) = message, request.writeID != nil else { return nil }
            return request
        }
        #expect(resent.map(\.action) == sentFirst.map(\.action))
        #expect(resent.map(\.writeID) == sentFirst.map(\.writeID))
        for request in resent { second.deliver(.response(number: request.number, status: .ok, data: "")) }
        #expect(await outcomes.wait { $0.count == 3 }, "\(outcomes.all)")
        #expect(Set(outcomes.all) == ["w0 true", "t true true", "w1 true"])
    }

    @Test func aResetSendsTheClientToTheNamedHostAndBackWhenThatHostIsUnreachable() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=wire", connector: server.connector)
        server.allowConnection()
        database.reference(withPath: "l").observe(.value) { _ in }
        let first = try #require(await server.waitForLink(1))
        #expect(await Self.waitFor(first, count: 2))
        server.allowConnection()
        first.deliver(.reset(host: "node-2.internal:9001"))
        let second = try #require(await server.waitForLink(2))
        #expect(await Self.waitFor(second, count: 2), "listens are restored there: \(second.requests)")
        #expect(server.endpoints.map(\.host) == ["127.0.0.1", "node-2.internal"])
        #expect(
            server.endpoints.last
                == RealtimeEndpoint(host: "node-2.internal", port: 9001, secure: false, namespace: "wire"))

        // The redirected host goes away: after one failed attempt the client uses its own URL again.
        server.makeUnreachable("node-2.internal")
        server.allowConnection()
        second.close()
        let third = try #require(await server.waitForLink(3))
        #expect(await Self.waitFor(third, count: 2))
        #expect(server.endpoints.map(\.host).suffix(2) == ["node-2.internal", "127.0.0.1"])
    }
}
