import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

@testable import Canopy

/// The SDK online, against a real server over real sockets.
@Suite(.timeLimit(.minutes(2)))
struct OnlineTests {
    @Test func aWriteIsSeenByAnotherClientAndAcknowledged() async throws {
        try await withServer { server in
            let (writer, reader) = (makeDatabase(server), makeDatabase(server))
            let seen = Recorder<Int>()
            reader.reference(withPath: "users/ada").observe(.value) { snapshot in
                if let score = (snapshot.value as? [String: Any])?["score"] as? Int { seen.record(score) }
            }
            try await writer.reference(withPath: "users/ada").setValue(["name": "Ada", "score": 36])
            let arrived = await seen.wait { $0.last == 36 }
            #expect(arrived, "\(seen.all)")
            let snapshot = try await reader.reference(withPath: "users/ada/name").getData()
            #expect(snapshot.value as? String == "Ada")
        }
    }

    @Test func localEventsComeAtOnceAndTheCompletionAfterTheServer() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "counter")
            let events = Recorder<String>()
            ref.observe(.value) { snapshot in events.record("value \(snapshot.value.map { "\($0)" } ?? "nil")") }
            await events.wait { !$0.isEmpty }
            ref.setValue(7) { error, _ in events.record("done \(error.map { "\($0)" } ?? "ok")") }
            let completed = await events.wait { $0.contains("done ok") }
            let all = events.all
            #expect(completed, "no completion: \(all)")
            let value = all.firstIndex(of: "value 7")
            let done = all.firstIndex(of: "done ok")
            #expect(value != nil && done != nil && (value ?? 0) < (done ?? 0), "events: \(all)")
        }
    }

    @Test func childEventsFollowAQueryWindow() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let scores = database.reference(withPath: "scores")
            try await scores.setValue(["a": 1, "b": 5, "c": 3, "d": 9])
            let added = Recorder<String>()
            scores.queryOrderedByValue().queryLimited(toLast: 2).observe(.childAdded) { added.record($0.key) }
            #expect(await added.wait { Set($0) == ["b", "d"] }, "\(added.all)")
            try await scores.child("e").setValue(7)
            #expect(await added.wait { $0.contains("e") }, "\(added.all)")
        }
    }

    @Test func aChildEventsSnapshotIsAtTheChild() async throws {
        try await withServer { server in
            let scores = makeDatabase(server).reference(withPath: "scores")
            try await scores.setValue(["a": 1, "b": 2])
            let refs = Recorder<String>()
            scores.queryOrderedByValue().observe(.childAdded) { refs.record($0.ref.url) }
            scores.observe(.childChanged) { refs.record("changed \($0.ref.url)") }
            #expect(await refs.wait { $0.count == 2 })
            try await scores.child("b/deep").setValue(true)
            #expect(await refs.wait { $0.count == 3 })
            #expect(refs.all == [scores.child("a").url, scores.child("b").url, "changed \(scores.child("b").url)"])
        }
    }

    @Test func infoConnectedFollowsTheConnection() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let states = Recorder<Bool>()
            database.reference(withPath: ".info/connected").observe(.value) {
                states.record($0.value as? Bool ?? false)
            }
            #expect(await states.wait { $0.first == false && $0.last == true }, "\(states.all)")
            database.goOffline()
            #expect(await states.wait { $0.last == false })
            database.goOnline()
            #expect(await states.wait { $0.last == true })
            let offset = try await database.reference(withPath: ".info/serverTimeOffset").getData()
            #expect(offset.value as? Double != nil)
        }
    }

    @Test func writesMadeOfflineLandOnceAndInOrder() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let log = database.reference(withPath: "log")
            try await log.child("start").setValue(true)
            database.goOffline()
            let done = Recorder<String>()
            for index in 0..<20 {
                log.child("entries/\(index)").setValue(index) { error, _ in
                    done.record(error == nil ? "ok" : "\(error!)")
                }
            }
            log.child("last").setValue(19) { error, _ in done.record(error == nil ? "ok" : "\(error!)") }
            try await Task.sleep(for: .milliseconds(200))
            #expect(done.all.isEmpty, "acknowledged while offline: \(done.all)")
            database.goOnline()
            #expect(await done.wait { $0.count == 21 })
            #expect(done.all.allSatisfy { $0 == "ok" })
            let stored = try await server.http(.GET, "/log/entries.json?ns=test")
            #expect(stored.json == .array((0..<20).map { .number(Double($0)) }))
        }
    }

    @Test func onDisconnectWritesRunOnTheServerAndLocally() async throws {
        try await withServer { server in
            let (device, observer) = (makeDatabase(server), makeDatabase(server))
            let status = device.reference(withPath: "status/morgan")
            try await status.setValue("online")
            try await status.onDisconnectSetValue("offline")
            let local = Recorder<String>()
            status.observe(.value) { local.record($0.value as? String ?? "") }
            let remote = Recorder<String>()
            observer.reference(withPath: "status/morgan").observe(.value) { remote.record($0.value as? String ?? "") }
            #expect(await remote.wait { $0.last == "online" })
            device.goOffline()
            #expect(await local.wait { $0.last == "offline" }, "applied locally on loss: \(local.all)")
            #expect(await remote.wait { $0.last == "offline" }, "run by the server: \(remote.all)")
        }
    }

    @Test func cancelledOnDisconnectOperationsDoNotRun() async throws {
        try await withServer { server in
            let (device, observer) = (makeDatabase(server), makeDatabase(server))
            let ref = device.reference(withPath: "presence/x")
            try await ref.setValue(true)
            try await ref.onDisconnectRemoveValue()
            try await ref.cancelDisconnectOperations()
            // Registered after the cancel, so its landing shows the server has run what was left.
            try await device.reference(withPath: "presence/gone").onDisconnectSetValue(true)
            let gone = Recorder<Bool>()
            observer.reference(withPath: "presence/gone").observe(.value) { gone.record($0.value as? Bool ?? false) }
            device.goOffline()
            #expect(await gone.wait { $0.last == true }, "the uncancelled operation did not run: \(gone.all)")
            let value = try await server.http(.GET, "/presence/x.json?ns=test")
            #expect(value.json == true)
        }
    }

    @Test func laterConnectionsGoToTheHostTheHelloNamesAndBackWhenItIsGone() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let named = try await TestServer.start(configuration: TestServer.defaultConfiguration(dataDirectory: nil))
        var configuration = TestServer.defaultConfiguration(dataDirectory: folder)
        configuration.advertiseHost = "127.0.0.1:\(named.port)"
        let first = try await TestServer.start(configuration: configuration)
        do {
            try await Self.followTheHelloHost(from: first, to: named)
        } catch {
            await named.stop()
            await first.stop()
            throw error
        }
        await first.stop()
    }

    private static func followTheHelloHost(from first: TestServer, to named: TestServer) async throws {
        let database = makeDatabase(first)
        let connected = Recorder<Bool>()
        database.reference(withPath: ".info/connected").observe(.value) { connected.record($0.value as? Bool ?? false) }
        #expect(await connected.wait { $0.last == true })
        #expect(await first.waitForOpenConnections(1))

        // Reconnecting goes to the host the hello named.
        database.goOffline()
        database.goOnline()
        #expect(
            await named.waitForOpenConnections(1, timeout: .seconds(60)), "the client did not move to the named host")
        #expect(await first.waitForOpenConnections(0))

        // That host gone, the client comes back to the one it was configured with.
        await named.stop()
        #expect(await first.waitForOpenConnections(1, timeout: .seconds(90)), "the client did not come back")
        database.goOffline()
    }

    @Test func tenClientsIncrementingTenTimesEachAddExactlyOneHundred() async throws {
        try await withServer { server in
            let clients = (0..<10).map { _ in makeDatabase(server) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    // Each client starts its ten increments at once, as an app reacting to taps would.
                    for _ in 0..<10 {
                        group.addTask {
                            try await client.reference(withPath: "counter").runTransactionBlock { data in
                                data.value = (data.value as? Int ?? 0) + 1
                                return .success(withValue: data)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = try await server.http(.GET, "/counter.json?ns=test")
            #expect(total.body == "100")
        }
    }

    @Test func anAbortedTransactionWritesNothing() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "t")
            try await ref.setValue(1)
            await #expect(throws: DatabaseError.transactionAborted) {
                try await ref.runTransactionBlock { _ in .abort() }
            }
            #expect(try await ref.getData().value as? Int == 1)
        }
    }

    @Test func aTransactionWritingThroughAnInvalidChildPathFailsAndWritesNothing() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "t")
            try await ref.setValue(["ok": 1])
            await #expect(throws: DatabaseError.invalidPath("a.b", reason: "key \"a.b\" contains '.'")) {
                try await ref.runTransactionBlock { data in
                    data.childData(byAppendingPath: "ok").value = 2
                    data.childData(byAppendingPath: "a.b").value = 3
                    return .success(withValue: data)
                }
            }
            #expect(try await ref.getData().value as? [String: Int] == ["ok": 1])
            // A valid nested path writes below the data.
            try await ref.runTransactionBlock { data in
                data.childData(byAppendingPath: "deep/er").value = 4
                return .success(withValue: data)
            }
            #expect(try await ref.child("deep/er").getData().value as? Int == 4)
        }
    }

    @Test func badInputFromTheAppIsATypedErrorAndNothingIsSent() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            await #expect(throws: DatabaseError.self) { try await database.reference(withPath: "a.b").setValue(1) }
            await #expect(throws: DatabaseError.self) { try await database.reference(withPath: "ok").setValue(Date()) }
            await #expect(throws: DatabaseError.self) {
                try await database.reference(withPath: "ok").setValue(Double.nan)
            }
            await #expect(throws: DatabaseError.self) {
                try await database.reference(withPath: "ok").updateChildValues(["a": 1, "a/b": 2])
            }
            await #expect(throws: DatabaseError.self) {
                try await database.reference(withPath: "ok").child("x#y").setValue(1)
            }
            let cancelled = Recorder<String>()
            database.reference(withPath: "q").queryLimited(toFirst: 1).queryLimited(toFirst: 2).observe(
                .value, with: { _ in }, withCancel: { cancelled.record("\($0)") })
            #expect(await cancelled.wait { !$0.isEmpty })
            let stored = try await server.http(.GET, "/.json?ns=test")
            #expect(stored.body == "null")
        }
    }

    @Test func getDataWhileOfflineAnswersFromWhatTheClientHolds() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "cached")
            try await ref.setValue("here")
            let seen = Recorder<String>()
            ref.observe(.value) { seen.record($0.value as? String ?? "") }
            #expect(await seen.wait { $0.last == "here" })
            database.goOffline()
            #expect(try await ref.getData().value as? String == "here")
            await #expect(throws: DatabaseError.self) { try await database.reference(withPath: "never/seen").getData() }
        }
    }

    @Test func aStreamStopsListeningWhenItsTaskEnds() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "stream")
            let reading = Task {
                var values: [Int] = []
                for try await snapshot in ref.values {
                    if let value = snapshot.value as? Int { values.append(value) }
                    if values.last == 3 { break }
                }
                return values
            }
            for value in 1...3 {
                try await ref.setValue(value)
                try await Task.sleep(for: .milliseconds(50))
            }
            let values = try await reading.value
            #expect(values.last == 3)
            #expect(await server.waitForMetric("canopy_listeners_active", toBe: 0))
        }
    }
}

/// The server restarts under connected clients.
@Suite(.timeLimit(.minutes(2)))
struct ServerRestartTests {
    @Test func listenersComeBackAndWritesMadeWhileTheServerWasDownLandOnceInOrder() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try await TestServer.start(configuration: TestServer.defaultConfiguration(dataDirectory: folder))
        let port = first.port
        let database = makeDatabase(first)
        let room = Recorder<String>()
        database.reference(withPath: "room/topic").observe(.value) { room.record($0.value as? String ?? "") }
        try await database.reference(withPath: "room/topic").setValue("before")
        #expect(await room.wait { $0.last == "before" })
        await first.stop()

        let landed = Recorder<String>()
        Self.writeWhileDown(database, landed)

        // The same port and folder, as a restarted process would have.
        var configuration = TestServer.defaultConfiguration(dataDirectory: folder)
        configuration.port = port
        let restarted = CanopyServer(configuration: configuration, logger: TestServer.makeLogger())
        let running = Task { try await restarted.run() }
        defer { running.cancel() }

        #expect(await landed.wait(timeout: .seconds(30)) { $0.count == 3 }, "\(landed.all)")
        #expect(landed.all == ["0", "1", "2"])
        let other = Database(url: "http://127.0.0.1:\(port)?ns=test", connector: Database.realtimeConnector)
        try await other.reference(withPath: "room/topic").setValue("after")
        #expect(await room.wait { $0.last == "after" }, "the listener came back: \(room.all)")
        let log = try await TestServer.http(baseURL: "http://127.0.0.1:\(port)", .GET, "/log.json?ns=test")
        #expect(log.json == [0, 1, 2])
    }

    static func writeWhileDown(_ database: Database, _ landed: Recorder<String>) {
        for index in 0..<3 {
            database.reference(withPath: "log/\(index)").setValue(index) { error, _ in
                landed.record(error == nil ? "\(index)" : "\(index) failed: \(error!)")
            }
        }
    }
}

/// Writes and transactions the server refuses or that the app overrides.
@Suite(.timeLimit(.minutes(2)))
struct RefusalTests {
    @Test func aWriteTheServerRefusesIsRevertedAndItsCompletionGetsTheServersError() async throws {
        try await withServer { server in
            let (client, other) = (makeDatabase(server), makeDatabase(server))
            try await other.reference(withPath: "big").setValue(1.7e308)
            // The client holds no data at `big`, so it resolves the increment to 1.7e308 locally;
            // the server adds it to what it holds, which overflows, and refuses the write.
            await #expect(throws: DatabaseError.server(status: "invalid_data", message: "")) {
                do {
                    try await client.reference(withPath: "big").setValue(Canopy.ServerValue.increment(1.7e308))
                } catch DatabaseError.server(let status, _) {
                    throw DatabaseError.server(status: status, message: "")
                }
            }
            #expect(try await other.reference(withPath: "big").getData().value as? Double == 1.7e308)
        }
    }

    /// The listener sees the optimistic value, then, once the server refuses the write, the
    /// server's data: the write is reverted with the right event.
    @Test func aRefusedWriteIsRevertedForListenersToTheServersData() async throws {
        try await withServer { server in
            let (client, other) = (makeDatabase(server), makeDatabase(server))
            try await other.reference(withPath: "big").setValue(1)
            let values = Recorder<String>()
            client.reference(withPath: "big").observe(.value) { values.record("\($0.value as? Double ?? -1)") }
            #expect(await values.wait { $0.last == "1.0" }, "\(values.all)")
            let connected = Recorder<Bool>()
            client.reference(withPath: ".info/connected").observe(.value) {
                connected.record($0.value as? Bool ?? false)
            }
            #expect(await connected.wait { $0.last == true })
            client.goOffline()
            // Only once the connection is closed may the other write not reach the client.
            #expect(await connected.wait { $0.last == false })
            try await other.reference(withPath: "big").setValue(1.5e308)
            // Offline, the client adds to the 1 it holds; the server will add to 1.5e308 and overflow.
            let completion = Recorder<String>()
            client.reference(withPath: "big").setValue(Canopy.ServerValue.increment(1e308)) { error, _ in
                completion.record(error.map { "\($0)" } ?? "ok")
            }
            #expect(await values.wait { $0.last == "\(1e308)" }, "\(values.all)")
            client.goOnline()
            #expect(await completion.wait { $0.count == 1 })
            #expect(completion.all.first?.contains("invalid_data") == true, "\(completion.all)")
            #expect(await values.wait { $0.last == "\(1.5e308)" }, "\(values.all)")
            #expect(values.all == ["1.0", "\(1e308)", "\(1.5e308)"])
        }
    }

    @Test func aSetOverARunningTransactionOverridesIt() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "contested")
            try await ref.setValue(0)
            let outcome = Recorder<String>()
            Self.runSlowTransactionThenSet(ref, outcome)
            #expect(await outcome.wait { $0.count == 1 }, "\(outcome.all)")
            #expect(outcome.all == ["\(DatabaseError.transactionOverriddenBySet)"])
            #expect(try await ref.getData().value as? String == "set wins")
        }
    }

    /// A transaction that has not been answered yet when a set at its location is made.
    static func runSlowTransactionThenSet(_ ref: DatabaseReference, _ outcome: Recorder<String>) {
        ref.database.goOffline()
        ref.runTransactionBlock(
            { data in
                data.value = "transaction"
                return .success(withValue: data)
            },
            andCompletionBlock: { error, committed, _ in
                outcome.record(error.map { "\($0)" } ?? "committed \(committed)")
            })
        ref.setValue("set wins")
        ref.database.goOnline()
    }

    @Test func withoutLocalEventsATransactionIsSeenOnlyOnceTheServerAgrees() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "quiet")
            try await ref.setValue(1)
            let seen = Recorder<Int>()
            ref.observe(.value) { if let value = $0.value as? Int { seen.record(value) } }
            #expect(await seen.wait { $0 == [1] })
            let result = try await ref.runTransactionBlock(
                { data in
                    data.value = (data.value as? Int ?? 0) + 1
                    return .success(withValue: data)
                }, withLocalEvents: false)
            #expect(result.value as? Int == 2)
            #expect(await seen.wait { $0.last == 2 })
            #expect(seen.all == [1, 2])
        }
    }

    struct Player: Codable, Equatable {
        var name: String
        var score: Int
        var tags: [String]
    }

    @Test func codableValuesRoundTrip() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let ref = database.reference(withPath: "players/ada")
            let ada = Player(name: "Ada", score: 36, tags: ["first", "best"])
            let written = Recorder<String>()
            try ref.setValue(from: ada) { error in written.record(error.map { "\($0)" } ?? "ok") }
            #expect(await written.wait { $0 == ["ok"] })
            #expect(try await ref.getData().data(as: Player.self) == ada)
        }
    }
}
