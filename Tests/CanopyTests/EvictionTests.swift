import CanopyServer
import CanopyTesting
import ClientCache
import Foundation
import Testing
import Tree

@testable import Canopy

/// The cache size: over `persistenceCacheSizeBytes`, the least recently used inactive queries go
/// with their data; active queries, `keepSynced` locations and pending writes stay.
@Suite(.timeLimit(.minutes(2)))
struct EvictionTests {
    static let megabyte = 1024 * 1024

    /// A string of about `kilobytes` KB, different for each `seed`.
    static func blob(_ seed: Int, kilobytes: Int) -> String {
        String(repeating: "\(seed % 10)", count: kilobytes * 1024)
    }

    @Test func pastTheCapTheOldestInactiveQueriesGoFirstAndKeptActiveAndPendingDataStay() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                var items: [String: Any] = [:]
                for index in 0..<12 { items["i\(index)"] = Self.blob(index, kilobytes: 100) }
                try await makeDatabase(server).reference().setValue([
                    "items": items, "kept": Self.blob(1, kilobytes: 200), "active": Self.blob(2, kilobytes: 200),
                ])

                let database = Database(
                    url: "http://127.0.0.1:\(server.port)?ns=test", connector: Database.realtimeConnector)
                try database.configurePersistence(enabled: true, cacheSizeBytes: UInt(Self.megabyte), directory: folder)
                database.serverUpdatesBetweenCacheChecks = 1

                let kept = database.reference(withPath: "kept")
                kept.keepSynced(true)
                let active = Recorder<Int>()
                database.reference(withPath: "active").observe(.value) {
                    active.record(($0.value as? String)?.count ?? 0)
                }
                #expect(await active.wait { $0.last == 200 * 1024 })

                // Each item is listened to once, in order, then left: twelve inactive queries, item 0
                // the least recently used.
                for index in 0..<12 {
                    let seen = Recorder<Int>()
                    let item = database.reference(withPath: "items/i\(index)")
                    let handle = item.observe(.value) { seen.record(($0.value as? String)?.count ?? 0) }
                    #expect(await seen.wait { $0.last == 100 * 1024 }, "item \(index)")
                    item.removeObserver(withHandle: handle)
                    try await Task.sleep(for: .milliseconds(5))
                }

                // A write the server never sees in this run: it counts toward the size but stays.
                database.goOffline()
                let draft = Self.blob(3, kilobytes: 300)
                let write: WriteStatus = database.reference(withPath: "drafts/d1").setValue(draft) { _, _ in }
                #expect(await write.isDurable)
                let persistence = try #require(database.repo?.persistence)
                persistence.evictNow()

                let size = try #require(database.persistenceSize)
                #expect(size.pendingWriteBytes > 300 * 1024)
                #expect(size.cachedBytes + size.pendingWriteBytes <= Self.megabyte, "\(size)")
                database.shutDown()

                // What the file holds now.
                let store = try SQLiteClientStore(
                    path: folder.appendingPathComponent(
                        Database.storeFileName(try database.endpoint.get())
                    ).path)
                var cached: [Int] = []
                for index in 0..<12 where !(try store.serverCache(at: Path("items/i\(index)"))).isEmpty {
                    cached.append(index)
                }
                #expect(!cached.isEmpty && cached.count < 12, "some items went, some stayed: \(cached)")
                #expect(cached == Array((12 - cached.count)..<12), "the least recently used went first: \(cached)")
                let trackedItems = try store.trackedQueries().filter { $0.path.wireString.hasPrefix("items/") }
                #expect(Set(trackedItems.map(\.path.wireString)) == Set(cached.map { "items/i\($0)" }))
                #expect(try store.serverCache(at: "kept").json() == JSONValue.string(Self.blob(1, kilobytes: 200)))
                #expect(try store.serverCache(at: "active").json() == JSONValue.string(Self.blob(2, kilobytes: 200)))
                #expect(try store.writes().map(\.path.wireString) == ["drafts/d1"])
                #expect(store.size.serverCache == size.cachedBytes)
            }
        }
    }

    @Test func persistenceSettingsAreCheckedAndRefusedOnceTheDatabaseIsInUse() throws {
        let database = Database(url: "http://127.0.0.1:1?ns=settings", connector: Database.realtimeConnector)
        #expect(
            throws: DatabaseError.invalidSetting(
                "persistenceCacheSizeBytes", reason: "500 is outside 1 MB to 100 MB (1048576 to 104857600)")
        ) {
            try database.configurePersistence(cacheSizeBytes: 500)
        }
        #expect(throws: DatabaseError.self) { try database.configurePersistence(cacheSizeBytes: 101 * 1024 * 1024) }
        // The property form logs and keeps the old value.
        database.persistenceCacheSizeBytes = 10
        #expect(database.persistenceCacheSizeBytes == 10 * 1024 * 1024)
        try database.configurePersistence(cacheSizeBytes: 1024 * 1024)
        #expect(database.persistenceCacheSizeBytes == 1024 * 1024)

        _ = database.reference(withPath: "x").observe(.value) { _ in }
        #expect(throws: DatabaseError.tooLate("isPersistenceEnabled")) {
            try database.configurePersistence(enabled: true)
        }
        database.isPersistenceEnabled = true
        #expect(database.isPersistenceEnabled == false, "a late change is ignored")
        database.shutDown()
    }
}
