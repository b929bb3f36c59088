import CanopyServer
import CanopyTesting
import ClientCache
import Foundation
import Testing
import Tree

@testable import Canopy

/// The cache bound holds on disk: the SQLite file and its write-ahead log stay within 1.5 times
/// `persistenceCacheSizeBytes` plus what is never evicted (pending writes, data listeners and
/// `keepSynced` hold), while an app listens to many items in turn and after it restarts.
@Suite(.timeLimit(.minutes(5)))
struct CacheBoundOnDiskTests {
    static let bound = 1024 * 1024

    /// The size of the file at `path`, 0 when there is none.
    static func bytes(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// The database file of `database` in `folder`, and the bytes it and its write-ahead log take.
    static func storeFile(_ database: Database, in folder: URL) throws -> String {
        folder.appendingPathComponent(Database.storeFileName(try database.endpoint.get())).path
    }

    static func onDisk(_ file: String) -> Int { bytes(of: file) + bytes(of: file + "-wal") }

    /// What the files may take: 1.5 times the bound, plus what is never evicted.
    static func allowed(_ statistics: CacheStatistics) -> Int {
        bound * 3 / 2 + statistics.pendingWriteBytes + statistics.keptBytes
    }

    /// A client of `server` keeping its cache in `folder` under the 1 MiB bound.
    static func persistentDatabase(_ server: TestServer, folder: URL) throws -> Database {
        let database = makeDatabase(server)
        try database.configurePersistence(enabled: true, cacheSizeBytes: UInt(bound), directory: folder)
        return database
    }

    /// Writes `items/i<n>` on `server`: `count` strings of `kilobytes` KB (one character less), in
    /// batches under the server's message limit.
    static func fill(_ server: TestServer, count: Int, kilobytes: Int) async throws {
        let filler = String(repeating: "x", count: kilobytes * 1024 - 8)
        let batch = max(1, 4 * 1024 / kilobytes)
        for start in stride(from: 0, to: count, by: batch) {
            let children = (start..<min(count, start + batch)).map {
                "\"i\($0)\":\"\(String(format: "%07d", $0))\(filler)\""
            }
            let response = try await server.http(
                .PATCH, "/items.json?ns=test", body: "{" + children.joined(separator: ",") + "}")
            #expect(response.status == 200, "\(response.body.prefix(200))")
        }
    }

    /// Listens to `items/i<index>` until its value arrives, then stops.
    static func listenOnce(_ database: Database, item index: Int, length: Int) async -> Bool {
        let seen = Recorder<Int>()
        let item = database.reference(withPath: "items/i\(index)")
        let handle = item.observe(.value) { seen.record(($0.value as? String)?.count ?? 0) }
        let arrived = await seen.wait { $0.last == length }
        item.removeObserver(withHandle: handle)
        return arrived
    }

    /// 2,000 items of 10 KB; 200 of 100 KB (200 server updates: fewer than the 1,000 between two
    /// checks by count, so only the check by bytes written keeps the bound); 1,000 of 2 KB (rows
    /// just over half a page, so each takes a page of its own: twice what it counts, on disk).
    @Test(arguments: [(2_000, 10), (200, 100), (1_000, 2)])
    func listeningToItemsInTurnKeepsTheFilesWithinTheBoundAlsoAfterARestart(
        count: Int, kilobytes: Int
    )
        async throws
    {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                try await Self.fill(server, count: count, kilobytes: kilobytes)
                let database = try Self.persistentDatabase(server, folder: folder)
                let file = try Self.storeFile(database, in: folder)
                for index in 0..<count {
                    #expect(await Self.listenOnce(database, item: index, length: kilobytes * 1024 - 1), "item \(index)")
                    guard (index + 1) % (count / 100) == 0 else { continue }
                    // Once the client stored what it was sent so far.
                    let statistics = try #require(await database.cacheStatistics)
                    #expect(Self.onDisk(file) <= Self.allowed(statistics), "after \(index + 1) items: \(statistics)")
                    #expect(statistics.cachedBytes + statistics.pendingWriteBytes <= Self.bound + Self.bound / 4)
                }
                let statistics = try #require(await database.cacheStatistics)
                #expect(statistics.keptBytes == 0 && statistics.pendingWriteBytes == 0, "\(statistics)")
                #expect(statistics.cachedBytes > Self.bound / 2, "the cache is used: \(statistics)")
                database.shutDown()

                // The app's next run, on the same file.
                let next = try Self.persistentDatabase(server, folder: folder)
                let restarted = try #require(await next.cacheStatistics)
                #expect(Self.onDisk(file) <= Self.allowed(restarted), "after the restart: \(restarted)")
                #expect(restarted.cachedBytes <= Self.bound)
                next.shutDown()
                // The least recently used items went, the most recently used one stayed.
                let store = try SQLiteClientStore(path: file)
                #expect(try store.serverCache(at: "items/i0").isEmpty)
                #expect(try store.serverCache(at: Path("items/i\(count - 1)")).isEmpty == false)
            }
        }
    }

    /// A file an earlier version filled past the bound (5 MB of queries nothing listens to) is
    /// brought under it when the app starts, with no server update to start a check.
    @Test func aFileFilledPastTheBoundIsBroughtUnderItAtStartUp() async throws {
        try await OfflineTests.withFolder { folder in
            let database = Database(url: "http://127.0.0.1:1?ns=startup", connector: Database.realtimeConnector)
            try database.configurePersistence(enabled: true, cacheSizeBytes: UInt(Self.bound), directory: folder)
            let file = try Self.storeFile(database, in: folder)
            do {
                let store = try SQLiteClientStore(path: file)
                let block = try Node(json: .string(String(repeating: "b", count: 100 * 1024)))
                for index in 0..<50 {
                    try store.overwriteServerCache(block, at: Path("old/q\(index)"))
                    try store.saveTrackedQuery(
                        TrackedQuery(
                            id: index, path: Path("old/q\(index)"), queryIdentifier: "default", params: [:],
                            lastUse: Double(index), isComplete: true, isActive: false))
                }
                store.close()
            }
            #expect(Self.onDisk(file) > 5 * Self.bound)

            let statistics = try #require(await database.cacheStatistics)
            database.goOffline()
            #expect(statistics.cachedBytes <= Self.bound, "\(statistics)")
            #expect(statistics.bytesOnDisk <= Self.allowed(statistics), "\(statistics)")
            #expect(Self.onDisk(file) == statistics.bytesOnDisk)
            database.shutDown()
            let store = try SQLiteClientStore(path: file)
            // The most recently used queries stayed.
            #expect(try store.serverCache(at: "old/q49").isEmpty == false)
            #expect(try store.serverCache(at: "old/q0").isEmpty)
        }
    }

    /// What `cacheStatistics` says is what the files hold: the cached and pending bytes the store
    /// counts, the bytes of the data a listener and `keepSynced` hold, and the files' sizes.
    @Test func statisticsAgreeWithTheFiles() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                let kept = String(repeating: "k", count: 200 * 1024)
                let listened = String(repeating: "l", count: 50 * 1024)
                try await makeDatabase(server).reference().setValue([
                    "kept": kept, "listened": listened, "other": String(repeating: "o", count: 30 * 1024),
                ])
                let database = try Self.persistentDatabase(server, folder: folder)
                let file = try Self.storeFile(database, in: folder)
                #expect(
                    await database.cacheStatistics
                        == CacheStatistics(
                            cachedBytes: 0, pendingWriteBytes: 0, keptBytes: 0,
                            bytesOnDisk: Self.onDisk(file), limitBytes: Self.bound))

                database.reference(withPath: "kept").keepSynced(true)
                let seen = Recorder<Int>()
                database.reference(withPath: "listened").observe(.value) {
                    seen.record(($0.value as? String)?.count ?? 0)
                }
                let other = database.reference(withPath: "other")
                let otherSeen = Recorder<Int>()
                let handle = other.observe(.value) { otherSeen.record(($0.value as? String)?.count ?? 0) }
                #expect(await seen.wait { $0.last == listened.count })
                #expect(await otherSeen.wait { $0.last == 30 * 1024 })
                other.removeObserver(withHandle: handle)
                #expect(
                    await eventually {
                        await database.cacheStatistics?.keptBytes == (6 + kept.count + 2) + (10 + listened.count + 2)
                    })

                // A write the server does not see in this run.
                database.goOffline()
                let write: WriteStatus = database.reference(withPath: "drafts/d1").setValue(
                    String(repeating: "d", count: 1000)
                ) { _, _ in }
                #expect(await write.isDurable)

                let statistics = try #require(await database.cacheStatistics)
                let size = try #require(database.persistenceSize)
                #expect(statistics.cachedBytes == size.cachedBytes)
                #expect(statistics.pendingWriteBytes == size.pendingWriteBytes)
                #expect(statistics.pendingWriteBytes > 1000)
                #expect(statistics.limitBytes == Self.bound)
                // Every key and JSON byte: `/kept/` and the string with its quotes, and so on.
                #expect(
                    statistics.cachedBytes == (6 + kept.count + 2) + (10 + listened.count + 2) + (7 + 30 * 1024 + 2))
                #expect(statistics.keptBytes == (6 + kept.count + 2) + (10 + listened.count + 2))
                #expect(statistics.bytesOnDisk == Self.onDisk(file))
                #expect(statistics.bytesOnDisk <= Self.allowed(statistics))
                database.shutDown()

                let store = try SQLiteClientStore(path: file)
                #expect(store.size.serverCache == statistics.cachedBytes)
                #expect(store.size.pendingWrites == statistics.pendingWriteBytes)
                #expect(try store.cachedBytes(under: ["kept", "listened"]) == statistics.keptBytes)
            }
        }
    }
}
