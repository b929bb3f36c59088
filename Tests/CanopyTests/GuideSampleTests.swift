import CanopyServer
import CanopyTesting
import Foundation
import Synchronization
import Testing

@testable import Canopy

/// The guide's samples against a real server, through `Database.database()` (pointed at the server
/// as `CANOPY_DATABASE_URL` would point it, without changing the process environment that other
/// tests read), as the guide says they behave.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct GuideSampleTests {
    /// Samples 1 to 3: persistence on, keepSynced on and off, two offline-capable queries. What the
    /// queries synced is kept on the device: a restarted client without a network gets the top
    /// scores from it.
    @Test func thePersistenceSamplesKeepWhatTheQueriesSyncedOnTheDevice() async throws {
        try await withServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "canopy-guide-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = "http://127.0.0.1:\(server.port)?ns=guide1"
            Database.defaultURLOverride.withLock { $0 = url }
            defer { Database.defaultURLOverride.withLock { $0 = nil } }
            try await makeDatabase(server, namespace: "guide1").reference(withPath: "scores").setValue(
                [
                    "bruhathkayosaurus": 55, "lambeosaurus": 21, "linhenykus": 80, "pterodactyl": 93, "stegosaurus": 5,
                    "triceratops": 22,
                ])
            Database.database().persistenceDirectory = folder
            sample1Persistence()
            sample2KeepSynced()
            sample3OfflineQueries()
            #expect(Database.database().isPersistenceEnabled)
            // The top scores reached this client. The query is complete on the device only once
            // the server answered its listen, which comes after its data: a write sent after the
            // listen is answered after it (a restart after the data alone finds the query
            // incomplete and shows nothing offline, as it did once in CI).
            let synced = Recorder<String>()
            Database.database().reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 4)
                .observe(.childAdded) { synced.record($0.key) }
            #expect(
                await synced.wait(timeout: .seconds(60)) {
                    Set($0) == ["bruhathkayosaurus", "linhenykus", "pterodactyl", "triceratops"]
                })
            try await Database.database().reference(withPath: "marker").setValue(true)
            #expect((Database.database().persistenceSize?.cachedBytes ?? 0) > 0, "the queries' data is on the device")
            Database.database().shutDown()

            let restarted = Database(url: url, connector: NetworkSwitch(on: false).connector)
            restarted.persistenceDirectory = folder
            restarted.isPersistenceEnabled = true
            let top = Recorder<String>()
            restarted.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 4).observe(.childAdded) {
                top.record($0.key)
            }
            #expect(await top.wait { Set($0) == ["bruhathkayosaurus", "linhenykus", "pterodactyl", "triceratops"] })
            restarted.shutDown()
        }
    }

    @Test func thePresenceSampleKeepsExactlyTheLiveDevicesAndTheServerSetsLastOnline() async throws {
        try await withServer { server in
            Database.defaultURLOverride.withLock { $0 = "http://127.0.0.1:\(server.port)?ns=guide" }
            defer { Database.defaultURLOverride.withLock { $0 = nil } }
            let device = Database.database()
            sample8Presence()
            sample5ConnectionState()
            sample7ClockSkew()
            // A second device running the same code, then vanishing without a clean close.
            let other = makeDatabase(server, namespace: "guide")
            let otherConnections = other.reference(withPath: "users/morgan/connections")
            other.reference(withPath: ".info/connected").observe(.value) { snapshot in
                guard snapshot.value as? Bool == true else { return }
                let con = otherConnections.childByAutoId()
                con.onDisconnectRemoveValue()
                con.setValue(true)
            }
            let watcher = makeDatabase(server, namespace: "guide")
            let connections = Recorder<Int>()
            watcher.reference(withPath: "users/morgan/connections").observe(.value) {
                connections.record(Int($0.childrenCount))
            }
            // Three clients connect first: on a busy machine that took more than the default 15 s.
            #expect(
                await connections.wait(timeout: .seconds(60)) { $0.last == 2 },
                "both devices are connected: \(connections.all)")

            device.goOffline()
            #expect(await connections.wait { $0.last == 1 }, "only the live device remains: \(connections.all)")
            let lastOnline = try await watcher.reference(withPath: "users/morgan/lastOnline").getData()
            let stamp = try #require(lastOnline.value as? Double)
            #expect(abs(stamp - Date().timeIntervalSince1970 * 1000) < 60_000, "set by the server's clock")

            other.goOffline()
            #expect(await connections.wait { $0.last == 0 })
            device.goOnline()
            #expect(await connections.wait { $0.last == 1 }, "the device is back: \(connections.all)")
        }
    }

    @Test func theOnDisconnectSampleLeavesNothingAfterItsCancel() async throws {
        try await withServer { server in
            Database.defaultURLOverride.withLock { $0 = "http://127.0.0.1:\(server.port)?ns=guide4" }
            defer { Database.defaultURLOverride.withLock { $0 = nil } }
            sample4OnDisconnect()
            sample6ServerTimestamp()
            let database = Database.database()
            // Every request above was answered once a later one is.
            try await database.reference(withPath: "marker").setValue(true)
            try await Task.sleep(for: .milliseconds(100))
            database.goOffline()
            let watcher = makeDatabase(server, namespace: "guide4")
            let lastOnline = Recorder<Double>()
            watcher.reference(withPath: "users/morgan/lastOnline").observe(.value) {
                if let value = $0.value as? Double { lastOnline.record(value) }
            }
            #expect(await lastOnline.wait { !$0.isEmpty }, "sample 6's onDisconnect timestamp ran")
            let message = try await watcher.reference(withPath: "disconnectmessage").getData()
            #expect(!message.exists(), "sample 4 cancelled its operations: \(message)")
        }
    }
}
