import CanopyServer
import CanopyTesting
import Foundation
import GRDB
import ServerStorage
import Testing
import Transport
import Tree

/// Writes that must never be stored: each is refused with a clear error, changes nothing in memory
/// or on disk, and after a restart the namespace loads with everything else intact.
struct NeverStoredTests {
    /// A request a realtime client sends that must be refused.
    struct RealtimeCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let action: ClientAction
        /// What the refusal's message must mention.
        let mentions: String
    }

    /// A REST request that must be refused with 400.
    struct RESTCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let method: TestHTTPMethod
        let target: String
        let body: String
        let mentions: String
    }

    /// What the namespace holds before each bad write; it must hold exactly this afterwards.
    static let original: JSONValue = ["big": 1.7e308, "keep": "safe", "a": ["v": 1, ".priority": 1]]

    static let realtimeCases: [RealtimeCase] = [
        RealtimeCase(
            testDescription: "increment that overflows",
            action: .put(path: "n/big", data: [".sv": ["increment": 1.7e308]], hash: nil), mentions: "finite"),
        RealtimeCase(
            testDescription: "increment that overflows, in a merge",
            action: .merge(path: "n", data: ["big": [".sv": ["increment": 1.7e308]]]), mentions: "finite"),
        RealtimeCase(
            testDescription: ".value holding an object",
            action: .put(path: "n/x", data: [".value": ["a": 1]], hash: nil), mentions: ".value"),
        RealtimeCase(
            testDescription: ".sv beside other members (p)",
            action: .put(path: "n/x", data: [".sv": "timestamp", "x": 1], hash: nil), mentions: ".sv"),
        RealtimeCase(
            testDescription: ".sv beside other members (m)",
            action: .merge(path: "n", data: ["x": [".sv": "timestamp", "x": 1]]), mentions: ".sv"),
        RealtimeCase(
            testDescription: ".sv beside other members (o)",
            action: .onDisconnectPut(path: "n/x", data: [".sv": "timestamp", "x": 1]), mentions: ".sv"),
        RealtimeCase(
            testDescription: ".sv beside other members (om)",
            action: .onDisconnectMerge(path: "n", data: ["x": [".sv": "timestamp", "x": 1]]), mentions: ".sv"),
        RealtimeCase(
            testDescription: ".value holding an object (o)",
            action: .onDisconnectPut(path: "n/x", data: [".value": ["a": 1]]), mentions: ".value"),
        RealtimeCase(
            testDescription: "overlapping merge members",
            action: .merge(path: "n", data: ["a": 1, "a/b": 2]), mentions: "descendant"),
        RealtimeCase(
            testDescription: "overlapping onDisconnect merge members",
            action: .onDisconnectMerge(path: "n", data: ["a": 1, "a/b": 2]), mentions: "descendant"),
        RealtimeCase(
            testDescription: "merge below .priority",
            action: .merge(path: "n/a/.priority", data: ["x": 1]), mentions: ".priority"),
        RealtimeCase(
            testDescription: "object as a priority",
            action: .put(path: "n/a/.priority", data: ["x": 1], hash: nil), mentions: "priority"),
        RealtimeCase(
            testDescription: "boolean as a priority",
            action: .merge(path: "n/a", data: [".priority": true]), mentions: "priority"),
        RealtimeCase(
            testDescription: ".info inside a merge member",
            action: .merge(path: "n/a", data: [".info/x": 1]), mentions: ".info"),
        RealtimeCase(
            testDescription: ".info inside an onDisconnect merge member",
            action: .onDisconnectMerge(path: "n/a", data: [".info/x": 1]), mentions: ".info"),
    ]

    static let restCases: [RESTCase] = [
        RESTCase(
            testDescription: "increment that overflows", method: .PUT, target: "/n/big.json?ns=test",
            body: #"{".sv":{"increment":1.7e308}}"#, mentions: "finite"),
        RESTCase(
            testDescription: ".value holding an object", method: .PUT, target: "/n/x.json?ns=test",
            body: #"{".value":{"a":1}}"#, mentions: ".value"),
        RESTCase(
            testDescription: ".sv beside other members", method: .PUT, target: "/n/x.json?ns=test",
            body: #"{".sv":"timestamp","x":1}"#, mentions: ".sv"),
        RESTCase(
            testDescription: "overlapping update members", method: .PATCH, target: "/n.json?ns=test",
            body: #"{"a":1,"a/b":2}"#, mentions: "descendant"),
        RESTCase(
            testDescription: "update below .priority", method: .PATCH, target: "/n/a/.priority.json?ns=test",
            body: #"{"x":1}"#, mentions: ".priority"),
        RESTCase(
            // A record's packed text is taken as it stands, but not where a priority goes.
            testDescription: "record as a priority in an update", method: .PATCH, target: "/n/a.json?ns=test",
            body: #"{".priority":{"x":1},"y":1}"#, mentions: "priority"),
        RESTCase(
            testDescription: "object as a priority", method: .PUT, target: "/n/a/.priority.json?ns=test",
            body: #"{"x":1}"#, mentions: "priority"),
        RESTCase(
            testDescription: ".info inside an update member", method: .PATCH, target: "/n/a.json?ns=test",
            body: #"{".info/x":1}"#, mentions: ".info"),
    ]

    @Test(arguments: realtimeCases)
    func realtimeWriteIsRefusedAndNothingIsStored(_ bad: RealtimeCase) async throws {
        try await Self.withRestarts { server in
            let client = try await RealtimeTestClient.connect(to: server)
            defer { Task { await client.close() } }
            let answer = try await client.request(bad.action)
            #expect(answer.status.text.hasPrefix("invalid"), "\(bad.testDescription): \(answer)")
            #expect(
                answer.data.stringValue?.contains(bad.mentions) == true,
                "\(bad.testDescription): the error does not say what was wrong: \(answer.data)")
            // An onDisconnect operation that was refused must not run either.
            await client.close()
        }
    }

    @Test(arguments: restCases)
    func restWriteIsRefusedAndNothingIsStored(_ bad: RESTCase) async throws {
        try await Self.withRestarts { server in
            let response = try await server.http(bad.method, bad.target, body: bad.body)
            #expect(response.status == 400, "\(bad.testDescription): \(response.status) \(response.body)")
            let message = response.json?["error"]?.stringValue ?? ""
            #expect(message.contains(bad.mentions), "\(bad.testDescription): \(response.body)")
        }
    }

    /// A refused write never reaches the store, so it never sends the namespace into recovery:
    /// good writes pipelined right behind bad ones all succeed, and reads never see a value that
    /// was not stored.
    @Test func refusedWritesDoNotDisturbGoodOnes() async throws {
        try await withClients(1) { server, clients in
            let client = clients[0]
            try await client.put("a", ["v": 1, ".priority": 1])
            var numbers: [(good: Int, bad: Int)] = []
            for round in 0..<200 {
                let bad = try await client.send(.merge(path: "a/.priority", data: ["x": 1]))
                let good = try await client.send(.put(path: "a/v", data: .number(Double(round)), hash: nil))
                numbers.append((good, bad))
            }
            for (good, bad) in numbers {
                #expect(try await client.response(to: bad).status == .invalidPath)
                #expect(try await client.response(to: good).status == .ok)
            }
            let stored = try await server.http(.GET, "/a.json?ns=test&format=export")
            #expect(stored.json == ["v": 199, ".priority": 1])
        }
    }

    /// A row that does not decode (one an older version stored as `null` after an overflow) is set
    /// aside when the namespace loads; everything else loads and stays writable.
    @Test(.enabled(if: !TestStore.isPostgres, "edits a namespace's SQLite file"))
    func anUnreadableRowDoesNotBrickTheNamespace() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withTestServer(dataDirectory: folder) { server in
            // Two writes: the object of both would be stored as one row (a packed record).
            let x = try await server.http(.PUT, "/x.json?ns=n", body: "1")
            let y = try await server.http(.PUT, "/y.json?ns=n", body: #"{"z":"kept"}"#)
            #expect(x.status == 200 && y.status == 200)
        }
        try Self.corruptRow("x", to: "null", in: folder + "/n.sqlite")
        try await withTestServer(dataDirectory: folder) { server in
            let read = try await server.http(.GET, "/.json?ns=n")
            #expect(read.status == 200, "\(read.body)")
            #expect(read.json == ["y": ["z": "kept"]])
            let write = try await server.http(.PUT, "/x.json?ns=n", body: "2")
            #expect(write.status == 200, "\(write.body)")
        }
        let store = try SQLiteServerStore(path: folder + "/n.sqlite")
        #expect(try store.loadTree() == (try Node(json: ["x": 2, "y": ["z": "kept"]])))
        let quarantined = try store.quarantinedRows()
        #expect(quarantined.map(\.path) == ["x"])
        #expect(quarantined.first?.value == "null")
    }

    /// Storage errors told to clients never name the server's files.
    @Test(.enabled(if: !TestStore.isPostgres, "puts a folder where a namespace's SQLite file goes"))
    func storageErrorsDoNotRevealFilePaths() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A folder where the namespace's database file should be: it cannot be opened.
        try FileManager.default.createDirectory(atPath: folder + "/n.sqlite", withIntermediateDirectories: true)
        try await withTestServer(dataDirectory: folder) { server in
            let response = try await server.http(.PUT, "/x.json?ns=n", body: "1")
            #expect(response.status >= 400)
            #expect(!response.body.contains(folder), "\(response.body)")
            #expect(!response.body.contains(".sqlite"), "\(response.body)")
        }
    }

    // MARK: Support

    /// Runs `body` against a server holding ``original`` at `n` in namespace `test`, then checks
    /// the namespace still holds exactly that, before and after a restart.
    static func withRestarts(_ body: (TestServer) async throws -> Void) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let expected = try Node(json: ["n": original])
        try await withTestServer(dataDirectory: folder) { server in
            let put = try await server.http(.PUT, "/n.json?ns=test", body: original.serialized())
            #expect(put.status == 200, "\(put.body)")
            try await body(server)
            try await expectStored(expected, on: server)
        }
        try await withTestServer(dataDirectory: folder) { server in
            try await expectStored(expected, on: server)
        }
        #expect(try SQLiteServerStore(path: folder + "/test.sqlite").quarantinedRows().isEmpty)
    }

    static func expectStored(_ expected: Node, on server: TestServer) async throws {
        let read = try await server.http(.GET, "/.json?ns=test&format=export")
        #expect(read.status == 200, "the namespace does not load: \(read.body)")
        #expect(read.json.flatMap { try? Node(json: $0) } == expected, "\(read.body)")
    }

    /// Overwrites the stored text of row `path` in the SQLite file at `file`, as a damaged file or an
    /// older version's bug would have left it.
    static func corruptRow(_ path: String, to value: String, in file: String) throws {
        let database = try DatabaseQueue(path: file)
        try database.write { db in
            try db.execute(sql: "UPDATE nodes SET value = ? WHERE path = ?", arguments: [value, path])
            #expect(db.changesCount == 1, "no row \(path)")
        }
        try database.close()
    }
}
