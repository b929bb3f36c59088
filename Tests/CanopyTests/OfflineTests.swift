import CanopyServer
import CanopyTesting
import ClientCache
import Foundation
import RealtimeClientSocket
import Synchronization
import Testing
import Tree

@testable import Canopy

/// A network the test switches on and off: while off, every connection attempt fails at once.
final class NetworkSwitch: Sendable {
    private let isOn: Mutex<Bool>

    init(on: Bool) { isOn = Mutex(on) }

    func turnOn() { isOn.withLock { $0 = true } }

    var connector: Connector {
        { [self] endpoint, lastSession in
            guard isOn.withLock({ $0 }) else { throw RealtimeClientError.connectFailed("the network is off") }
            return try await Database.realtimeConnector(endpoint, lastSession)
        }
    }
}

/// Persistence: what a client synced, its pending writes and tracked queries survive a restart of
/// the app (a new `Database` on the same folder) and serve it without a network.
@Suite(.timeLimit(.minutes(2)))
struct OfflineTests {
    /// A client of `server` that keeps its data in `folder`, as an app would across runs.
    static func persistentDatabase(_ server: TestServer, folder: URL, network: NetworkSwitch) -> Database {
        let database = Database(url: "http://127.0.0.1:\(server.port)?ns=test", connector: network.connector)
        database.persistenceDirectory = folder
        database.isPersistenceEnabled = true
        return database
    }

    /// Waits until `database`'s store records a listen at `path` as complete. A listener has the
    /// server's data before the listen's `ok`, which is what marks it complete on disk: a run shut
    /// down on the data alone can leave the next run with nothing complete.
    static func waitUntilKeptComplete(_ database: Database, _ path: Path) async -> Bool {
        await eventually {
            guard let store = database.repo?.persistence?.store else { return false }
            return try store.trackedQueries(atOrAbove: path).contains { $0.path == path && $0.isComplete }
        }
    }

    static func withFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-offline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    @Test func afterARestartWithoutNetworkListenersFireFromTheCacheAndQueuedWritesLandOnce() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                try await makeDatabase(server).reference(withPath: "room").setValue(["topic": "gardens", "count": 1])
                let first = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let seen = Recorder<String>()
                first.reference(withPath: "room").observe(.value) {
                    seen.record($0.childSnapshot(forPath: "topic").value as? String ?? "-")
                }
                #expect(await seen.wait { $0.last == "gardens" })
                #expect(await Self.waitUntilKeptComplete(first, "room"))
                first.shutDown()

                // Two runs without a network, each writing.
                for run in 0..<2 {
                    let offline = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: false))
                    let topic = Recorder<String>()
                    offline.reference(withPath: "room/topic").observe(.value) {
                        topic.record($0.value as? String ?? "-")
                    }
                    #expect(await topic.wait { $0 == ["gardens"] }, "run \(run): the cache answered: \(topic.all)")
                    let count = Recorder<Int>()
                    offline.reference(withPath: "room/count").observe(.value) { count.record($0.value as? Int ?? -1) }
                    // (Completion forms: offline, the async forms would wait for the server.)
                    offline.reference(withPath: "room/count").setValue(Canopy.ServerValue.increment(1)) { _, _ in }
                    offline.reference(withPath: "room/log/\(run)").setValue("offline \(run)") { _, _ in }
                    // The restored increment from the run before applies locally too.
                    #expect(await count.wait { $0.last == 2 + run }, "run \(run): \(count.all)")
                    offline.shutDown()
                }

                let online = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let count = Recorder<Int>()
                online.reference(withPath: "room/count").observe(.value) { count.record($0.value as? Int ?? -1) }
                #expect(
                    await ServerProbe.wait(server, ["room/count", "room/log"]) {
                        $0 == [3, ["offline 0", "offline 1"]]
                    })
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await ServerProbe.value(server, "room/count") == 3, "each queued increment applied once")
                #expect(await count.wait { $0.last == 3 })
                online.shutDown()
            }
        }
    }

    /// The guide's offline queries: after `limitToLast(4)` ran online, an offline restart asking
    /// `limitToLast(2)` gets child_added for the top two at once but no value event; asking
    /// `limitToLast(6)` gets the four cached at once, and once the connection returns, the two
    /// missing, then the value event.
    @Test func offlineQueriesAnswerFromWhatAnotherQueryCached() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                try await makeDatabase(server).reference(withPath: "scores").setValue(
                    ["a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7])
                let first = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let top4 = Recorder<String>()
                first.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 4).observe(.value) {
                    top4.record($0.children.compactMap { ($0 as? DataSnapshot)?.key }.joined())
                }
                #expect(await top4.wait { $0.last == "defg" }, "\(top4.all)")
                #expect(await Self.waitUntilKeptComplete(first, "scores"))
                first.shutDown()

                let network = NetworkSwitch(on: false)
                let offline = Self.persistentDatabase(server, folder: folder, network: network)
                let scores = offline.reference(withPath: "scores").queryOrderedByValue()
                let top2 = Recorder<String>()
                let top2Values = Recorder<String>()
                scores.queryLimited(toLast: 2).observe(.childAdded) { top2.record($0.key) }
                scores.queryLimited(toLast: 2).observe(.value) { top2Values.record("\($0.childrenCount)") }
                #expect(await top2.wait { Set($0) == ["f", "g"] }, "\(top2.all)")
                let top6 = Recorder<String>()
                let top6Values = Recorder<String>()
                scores.queryLimited(toLast: 6).observe(.childAdded) { top6.record($0.key) }
                scores.queryLimited(toLast: 6).observe(.value) { top6Values.record("\($0.childrenCount)") }
                #expect(await top6.wait { Set($0) == ["d", "e", "f", "g"] }, "\(top6.all)")
                try await Task.sleep(for: .milliseconds(300))
                #expect(top2Values.all.isEmpty && top6Values.all.isEmpty, "no value event offline")
                #expect(top2.all.count == 2 && top6.all.count == 4)

                network.turnOn()
                offline.goOnline()
                #expect(await top6Values.wait { $0 == ["6"] }, "\(top6Values.all)")
                #expect(Set(top6.all.suffix(2)) == ["b", "c"], "the two missing came before the value: \(top6.all)")
                offline.shutDown()
            }
        }
    }

    @Test func aSecondDatabaseOnTheSameFolderRunsInMemoryAndSaysWhy() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                let first = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                try await first.reference(withPath: "x").setValue(1)
                // The store is taken: the second client logs it and works in memory.
                let second = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                try await second.reference(withPath: "y").setValue(2)
                #expect(second.repo?.persistence == nil)
                #expect(first.repo?.persistence != nil)
                first.shutDown()
                second.shutDown()
            }
        }
    }

    /// Each write reports when it is saved on the device and when the server acknowledged it, also
    /// after a restart (``Database/pendingWrites``).
    @Test func aWriteIsDurableThenAcknowledgedAlsoAfterARestart() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                let offline = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: false))
                let write: WriteStatus = offline.reference(withPath: "notes/a").setValue("written offline")
                #expect(await write.isDurable)
                #expect(!write.isFinished)
                #expect((offline.persistenceSize?.pendingWriteBytes ?? 0) > 0)
                let refused: WriteStatus = offline.reference(withPath: "notes/b").setValue(Date())
                #expect(await !refused.isDurable)
                await #expect(throws: DatabaseError.self) { try await refused.acknowledged }
                offline.shutDown()

                let network = NetworkSwitch(on: false)
                let restarted = Self.persistentDatabase(server, folder: folder, network: network)
                let pending = restarted.pendingWrites
                #expect(pending.map(\.path) == ["/notes/a"])
                #expect(await pending.first?.isDurable == true)
                network.turnOn()
                restarted.goOnline()
                try await pending.first?.acknowledged
                #expect(try await ServerProbe.value(server, "notes") == ["a": "written offline"])
                #expect(restarted.pendingWrites.isEmpty)
                #expect(restarted.persistenceSize?.pendingWriteBytes == 0)

                let purged: WriteStatus = restarted.reference(withPath: "notes/c").setValue(3)
                restarted.goOffline()
                restarted.purgeOutstandingWrites()
                await #expect(throws: DatabaseError.writeCanceled) { try await purged.acknowledged }
                restarted.shutDown()
            }
        }
    }

    /// The client id outlives a run: a new run's writes must not carry numbers the server already saw
    /// (it would answer them as duplicates without applying them).
    @Test func eachRunWritesUnderNewNumbersSoTheServerAppliesThem() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                for run in 1...3 {
                    let database = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                    let write: WriteStatus = database.reference(withPath: "runs/last").setValue(run)
                    try await write.acknowledged
                    #expect(try await ServerProbe.value(server, "runs/last") == .number(Double(run)), "run \(run)")
                    database.shutDown()
                }
            }
        }
    }

    /// A kept transaction restored in a new run waits for the app to register its block again; an
    /// unregistered name is refused.
    @Test func aRestoredTransactionWaitsForItsBlockToBeRegistered() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                let add: @Sendable (MutableData, Any?) -> TransactionResult = { data, amount in
                    data.value = ((data.value as? Int) ?? 0) + ((amount as? Int) ?? 0)
                    return .success(withValue: data)
                }
                let offline = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: false))
                offline.registerTransaction(named: "add", add)
                let refused = Recorder<String>()
                offline.reference(withPath: "total").runTransaction(named: "nope") { error, committed, _ in
                    refused.record("\(committed) \(error.map { "\($0)" } ?? "-")")
                }
                #expect(
                    await refused.wait {
                        $0.first?.hasPrefix("false no transaction block is registered as \"nope\"") == true
                    },
                    "\(refused.all)")
                let local = Recorder<Int>()
                offline.reference(withPath: "total").observe(.value) { local.record($0.value as? Int ?? 0) }
                offline.reference(withPath: "total").runTransaction(named: "add", argument: 7)
                #expect(await local.wait { $0.last == 7 }, "it runs on the local data offline: \(local.all)")
                _ = offline.persistenceSize
                offline.shutDown()
                // Another client changes the data: the put saved offline is stale, so the
                // transaction must run again, which takes its block.
                try await makeDatabase(server).reference(withPath: "total").setValue(10)

                let network = NetworkSwitch(on: true)
                let restarted = Self.persistentDatabase(server, folder: folder, network: network)
                restarted.goOnline()
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await ServerProbe.value(server, "total") == 10, "not run before its block is back")
                restarted.registerTransaction(named: "add", add)
                #expect(await ServerProbe.wait(server, ["total"]) { $0 == [17] })
                restarted.shutDown()
            }
        }
    }

    @Test func withoutPersistenceAWriteIsNeverDurableButIsAcknowledged() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            let write: WriteStatus = database.reference(withPath: "memory").setValue(1)
            #expect(await !write.isDurable)
            try await write.acknowledged
            #expect(write.isFinished)
            #expect(database.persistenceSize == nil)
        }
    }

    /// `keepSynced(true)` downloads a location and keeps it synced with no listener attached: the
    /// data, and a later change to it, are on the device for an offline restart.
    @Test func keepSyncedKeepsALocationOnTheDeviceWithoutAListener() async throws {
        try await withServer { server in
            try await Self.withFolder { folder in
                let writer = makeDatabase(server)
                try await writer.reference(withPath: "kept").setValue(["a": 1])
                let first = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                first.reference(withPath: "kept").keepSynced(true)
                #expect(
                    await Recorder<Void>().wait { _ in (first.persistenceSize?.cachedBytes ?? 0) > 0 },
                    "downloaded with no listener")
                // The data comes before the listen's answer, which marks it complete on the device:
                // shut down on the data alone, the next run has no value to show offline.
                #expect(await Self.waitUntilKeptComplete(first, "kept"))
                try await writer.reference(withPath: "kept/b").setValue(2)
                // No listener tells when the change reached this client (it comes after the writer's
                // answer): the store does.
                #expect(
                    await eventually { try first.repo?.persistence?.store?.serverCache(at: "kept/b").json() == 2 },
                    "the change reached the device")
                first.shutDown()

                let offline = Self.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: false))
                let seen = Recorder<String>()
                offline.reference(withPath: "kept").observe(.value) {
                    let value = $0.value as? [String: Int] ?? [:]
                    seen.record("a=\(value["a"] ?? 0) b=\(value["b"] ?? 0)")
                }
                #expect(await seen.wait { $0.last == "a=1 b=2" }, "\(seen.all)")
                offline.shutDown()
            }
        }
    }
}
