import CanopyServer
import CanopyTesting
import Foundation
import Logging
import Testing

@testable import Canopy

/// Names of Firebase's Apple SDK an app written against it uses, each against a real server with
/// Firebase's signature and behaviour.
@Suite(.timeLimit(.minutes(2)))
struct FirebaseNamesTests {
    /// The server's data at `path` (namespace `test`), as JSON text.
    static func stored(_ server: TestServer, _ path: String) async throws -> String {
        try await server.http(.GET, "/\(path).json?ns=test").body
    }

    @Test func theSDKVersionIsTheServersAndAReferenceNamesItsDatabase() async throws {
        #expect(Database.sdkVersion() == CanopyServer.version)
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "a/b")
            #expect(ref.database === database)
            #expect(ref.child("c").database === database && ref.parent?.database === database)
        }
    }

    @Test func setLoggingEnabledLetsTheSDKsDebugMessagesThrough() async throws {
        defer { Database.setLoggingEnabled(false) }
        try await withServer { server in
            let lines = Recorder<String>()
            var logger = Logger(label: "canopy.client") { _ in LineRecorder(lines: lines) }
            logger.logLevel = .info
            Database.setLoggingEnabled(true)
            let database = Database(
                url: "http://127.0.0.1:\(server.port)?ns=test", connector: Database.realtimeConnector, logger: logger)
            try await database.reference(withPath: "x").setValue(1)
            #expect(await lines.wait { $0.contains("debug connected") }, "\(lines.all)")
            Database.setLoggingEnabled(false)
            database.logger.debug("hidden")
            database.logger.info("shown")
            Database.setLoggingEnabled(true)
            database.logger.debug("shown again")
            let probes = lines.all.filter {
                $0.hasSuffix(" hidden") || $0.hasSuffix(" shown") || $0.hasSuffix(" again")
            }
            #expect(probes == ["info shown", "debug shown again"])
        }
    }

    @Test func removeAndOnDisconnectCompletionBlocksTakeFirebasesLabel() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let done = Recorder<String>()
            let ref = database.reference(withPath: "r")
            try await ref.setValue(["gone": 1, "kept": 2, "offline": 3])
            ref.child("gone").removeValue(completionBlock: { error, ref in
                done.record("removed \(ref.key ?? "") \(error == nil)")
            })
            ref.child("offline").onDisconnectRemoveValue(completionBlock: { error, _ in
                done.record("onDisconnect remove \(error == nil)")
            })
            try await ref.child("kept").onDisconnectSetValue("lost")
            ref.child("kept").cancelDisconnectOperations(completionBlock: { error, _ in
                done.record("cancelled \(error == nil)")
            })
            #expect(await done.wait { $0.count == 3 })
            #expect(Set(done.all) == ["removed gone true", "onDisconnect remove true", "cancelled true"])
            #expect(try await Self.stored(server, "r") == #"{"kept":2,"offline":3}"#)
            database.goOffline()
            #expect(await eventually { try await Self.stored(server, "r") == #"{"kept":2}"# })
        }
    }

    @Test func asyncWritesReturnTheReference() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "w")
            var returned: [DatabaseReference] = []
            returned.append(try await ref.child("a").setValue(1))
            returned.append(try await ref.child("b").setValue(2, andPriority: 5))
            returned.append(try await ref.child("b").setPriority(6))
            returned.append(try await ref.updateChildValues(["c": 3, "d": 4]))
            returned.append(try await ref.child("d").removeValue())
            returned.append(try await ref.child("e").onDisconnectSetValue(5))
            returned.append(try await ref.child("f").onDisconnectSetValue(6, andPriority: 1))
            returned.append(try await ref.onDisconnectUpdateChildValues(["g": 7]))
            returned.append(try await ref.child("c").onDisconnectRemoveValue())
            returned.append(try await ref.child("f").cancelDisconnectOperations())
            let expected = [
                ref.child("a"), ref.child("b"), ref.child("b"), ref, ref.child("d"), ref.child("e"), ref.child("f"),
                ref,
                ref.child("c"), ref.child("f"),
            ]
            #expect(returned.map(\.url) == expected.map(\.url))
            let exported = try await ref.getData().valueInExportFormat() as? [String: Any]
            #expect((exported?["b"] as? [String: Any])?[".priority"] as? Int == 6)
            #expect(try await Self.stored(server, "w") == #"{"a":1,"b":2,"c":3}"#)
            ref.database.goOffline()
            #expect(await eventually { try await Self.stored(server, "w") == #"{"a":1,"b":2,"e":5,"g":7}"# })
        }
    }

    @Test func anAsyncTransactionReturnsWhetherItCommittedAndDoesNotThrowOnAbort() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "likes")
            try await ref.setValue(1)
            let seen = Recorder<Int>()
            ref.observe(.value) { if let likes = $0.value as? Int { seen.record(likes) } }
            #expect(await seen.wait { $0 == [1] })
            let (committed, snapshot) = try await ref.runTransactionBlock { data in
                data.value = (data.value as? Int ?? 0) + 1
                return .success(withValue: data)
            }
            #expect(committed && snapshot.value as? Int == 2)
            let (aborted, current) = try await ref.runTransactionBlock({ _ in .abort() }, withLocalEvents: false)
            #expect(!aborted && current.value as? Int == 2)
            // The form returning the snapshot keeps throwing on an abort.
            await #expect(throws: DatabaseError.transactionAborted) {
                let _: DataSnapshot = try await ref.runTransactionBlock { _ in .abort() }
            }
            #expect(try await Self.stored(server, "likes") == "2")
        }
    }

    @Test func singleEventsCanBeAwaitedAndCarryThePreviousKey() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "scores")
            try await ref.setValue(["a": 1, "b": 2, "c": 3])
            let value = await ref.observeSingleEvent(of: .value)
            #expect(value.childrenCount == 3)
            let (first, previous) = await ref.queryOrderedByValue().observeSingleEventAndPreviousSiblingKey(
                of: .childAdded)
            #expect(first.key == "a" && previous == nil)
            #expect(first.ref.url == ref.child("a").url)

            let loaded = Recorder<UInt>()
            ref.queryOrderedByValue().observe(.value) { loaded.record($0.childrenCount) }
            #expect(await loaded.wait { $0.contains(3) }, "\(loaded.all)")
            let changed = Recorder<String>()
            ref.queryOrderedByValue().observeSingleEvent(
                of: .childChanged,
                andPreviousSiblingKeyWith: { snapshot, previous in
                    changed.record("\(snapshot.key) after \(previous ?? "nothing")")
                })
            try await ref.child("b").setValue(2.5)
            try await ref.child("c").setValue(4)
            #expect(await changed.wait { !$0.isEmpty })
            #expect(changed.all == ["b after a"])

            let refused = Recorder<String>()
            ref.queryLimited(toFirst: 1).queryLimited(toFirst: 2).observeSingleEvent(
                of: .value, andPreviousSiblingKeyWith: { _, _ in refused.record("data") },
                withCancel: { refused.record("\($0)") })
            #expect(await refused.wait { !$0.isEmpty })
            #expect(refused.all.count == 1 && refused.all.first?.hasPrefix("invalid query") == true, "\(refused.all)")

            // The async form cannot report the refusal: it waits until its task is cancelled.
            let waiting = Task {
                await ref.queryLimited(toFirst: 1).queryLimited(toFirst: 2).observeSingleEvent(of: .value)
            }
            waiting.cancel()
            let empty = await waiting.value
            #expect(!empty.exists() && empty.ref.url == ref.url)
        }
    }
}

extension GuideSampleTests {
    /// `DatabaseReference.goOffline()` takes every database `Database.database(url:)` made offline,
    /// so it runs in this serialized suite, the one other user of those instances.
    @Test func theClassMethodsTakeEveryDatabaseOfflineAndBackOnline() async throws {
        try await withServer { server in
            let databases = ["classes1", "classes2"].map {
                Database.database(url: "http://127.0.0.1:\(server.port)?ns=\($0)")
            }
            defer { for database in databases { database.shutDown() } }
            let states = databases.map { _ in Recorder<Bool>() }
            for (database, recorder) in zip(databases, states) {
                database.reference(withPath: ".info/connected").observe(.value) {
                    recorder.record($0.value as? Bool ?? false)
                }
            }
            #expect(await eventually { states.allSatisfy { $0.all.last == true } })
            DatabaseReference.goOffline()
            #expect(await eventually { states.allSatisfy { $0.all.last == false } })
            let _: WriteStatus = databases[0].reference(withPath: "queued").setValue(1)
            let whileOffline = try await server.http(.GET, "/queued.json?ns=classes1")
            #expect(whileOffline.body == "null")
            DatabaseReference.goOnline()
            #expect(await eventually { states.allSatisfy { $0.all.last == true } })
            #expect(await eventually { try await server.http(.GET, "/queued.json?ns=classes1").body == "1" })
        }
    }
}

/// Records each message as `"<level> <message>"`.
struct LineRecorder: LogHandler {
    let lines: Recorder<String>
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { lines.record("\(event.level) \(event.message)") }
}
