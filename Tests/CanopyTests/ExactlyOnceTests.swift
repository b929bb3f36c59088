import CanopyServer
import CanopyTesting
import Foundation
import Synchronization
import Testing
import Transport
import Tree

@testable import Canopy

/// Real connections whose answers the test can make go missing, as when a network drops on the
/// way back: the server gets and applies the writes, the client never hears of it.
final class LossyNetwork: Sendable {
    private let links = Mutex<[LossyLink]>([])
    private let stripsExtensions: Bool

    /// With `stripsExtensions`, the client sees a server without Canopy's extensions.
    init(stripsExtensions: Bool = false) { self.stripsExtensions = stripsExtensions }

    var connector: Connector {
        { [self] endpoint, lastSession in
            let inner = try await Database.realtimeConnector(endpoint, lastSession)
            let link = LossyLink(inner: inner, stripsExtensions: stripsExtensions)
            links.withLock { $0.append(link) }
            return link
        }
    }

    /// From now on nothing the server sends on the current connections arrives.
    func dropEverythingFromTheServer() { links.withLock { links in links.forEach { $0.dropFromNowOn() } } }

    /// Cuts the connections the answers were lost on (an answer that comes late on one of them stays
    /// lost); later connections are whole.
    func cutAndHeal() {
        let cut = links.withLock { links in
            defer { links = [] }
            return links
        }
        for link in cut { link.close() }
    }
}

final class LossyLink: ServerLink {
    let hello: RealtimeHello
    let messages: AsyncStream<ServerMessage>
    private let inner: any ServerLink
    private let dropping = Mutex(false)

    init(inner: any ServerLink, stripsExtensions: Bool) {
        self.inner = inner
        var hello = inner.hello
        if stripsExtensions { hello.extensions = [] }
        self.hello = hello
        let (stream, continuation) = AsyncStream.makeStream(of: ServerMessage.self)
        messages = stream
        Task { [self] in
            for await message in inner.messages where !dropping.withLock({ $0 }) { continuation.yield(message) }
            continuation.finish()
        }
    }

    func dropFromNowOn() { dropping.withLock { $0 = true } }

    func send(_ message: ClientMessage) -> Bool { inner.send(message) }

    func close() { inner.close() }
}

/// A write whose answer was lost with the connection is sent again, and applied once.
@Suite(.timeLimit(.minutes(2)))
struct ExactlyOnceTests {
    /// Makes `count` increments and one transaction while the answers are lost, waits until the
    /// server applied them all, cuts the connection, and returns once every completion ran.
    static func incrementWhileAnswersAreLost(
        _ server: TestServer, network: LossyNetwork, count: Int
    ) async throws -> (completions: [String], counter: JSONValue?, transactions: JSONValue?) {
        let database = Database(url: "http://127.0.0.1:\(server.port)?ns=test", connector: network.connector)
        try await database.reference(withPath: "counter").setValue(0)
        let completions = Recorder<String>()
        network.dropEverythingFromTheServer()
        for index in 0..<count {
            database.reference(withPath: "counter").setValue(Canopy.ServerValue.increment(1)) { error, _ in
                completions.record(error.map { "\(index) \($0)" } ?? "ok")
            }
        }
        database.reference(withPath: "transactions").runTransactionBlock { data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return .success(withValue: data)
        } andCompletionBlock: { error, committed, _ in
            completions.record(error.map { "transaction \($0)" } ?? "transaction \(committed)")
        }
        let applied = await ServerProbe.wait(server, ["counter", "transactions"]) { values in
            values == [.number(Double(count)), 1]
        }
        #expect(applied, "the server applied every write before the connection was cut")
        #expect(completions.all.isEmpty, "no answer got through: \(completions.all)")
        network.cutAndHeal()
        #expect(await completions.wait(timeout: .seconds(20)) { $0.count == count + 1 }, "\(completions.all)")
        try await Task.sleep(for: .milliseconds(200))
        return (
            completions.all, try await ServerProbe.value(server, "counter"),
            try await ServerProbe.value(server, "transactions")
        )
    }

    @Test func writesAndATransactionWhoseAnswersWereLostApplyOnceWhenResent() async throws {
        try await withServer { server in
            let result = try await Self.incrementWhileAnswersAreLost(server, network: LossyNetwork(), count: 20)
            #expect(result.completions.filter { $0 == "ok" }.count == 20, "\(result.completions)")
            #expect(result.completions.contains("transaction true"))
            #expect(result.counter == 20)
            #expect(result.transactions == 1)
        }
    }

    /// Without the extension (any other server) the client does what the official clients do:
    /// writes are resent plainly and the transaction runs again, so each applies twice. This is
    /// what write ids fix.
    @Test func withoutWriteIDsResentWritesApplyAgainAsWithTheOfficialClients() async throws {
        try await withServer { server in
            let network = LossyNetwork(stripsExtensions: true)
            let result = try await Self.incrementWhileAnswersAreLost(server, network: network, count: 20)
            #expect(result.counter == 40)
            #expect(result.transactions == 2)
        }
    }
}

/// Reads the server's data over REST, bypassing every client.
enum ServerProbe {
    static func value(_ server: TestServer, _ path: String) async throws -> JSONValue? {
        try await server.http(.GET, "/\(path).json?ns=test").json
    }

    /// Waits until `condition` holds for the values at `paths`; returns whether it did in time.
    static func wait(
        _ server: TestServer, _ paths: [String], timeout: Duration = .seconds(15),
        until condition: ([JSONValue?]) -> Bool
    ) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(20)) {
            var values: [JSONValue?] = []
            for path in paths { values.append(try? await value(server, path)) }
            return condition(values)
        }
    }
}
