import CanopyServer
import CanopyTesting
import Foundation
import Persistence
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
