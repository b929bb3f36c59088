import CanopyServer
import CanopyTesting
import Foundation
import GRDB
import Logging
import Synchronization
import Testing
import Tree

@testable import Canopy
@testable import ClientCache

/// Collects what a logger was told at `.error` and above.
final class ErrorLog: LogHandler, Sendable {
    private let messages = Mutex<[String]>([])

    var errors: [String] { messages.withLock { $0 } }

    var logLevel: Logger.Level {
        get { .error }
        set {}
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        // `Database.setLoggingEnabled(true)`, in a test running meanwhile, lets debug messages through.
        guard event.level >= .error else { return }
        messages.withLock { $0.append("\(event.message)") }
    }

    var logger: Logger { Logger(label: "canopy.tests.storage") { _ in self } }
}

/// A store that cannot be opened, or that fails in the middle of a run, costs the app its
/// persistence (one error in the log) and nothing else: it carries on in memory.
@Suite(.timeLimit(.minutes(2)))
struct ClientStorageFailureTests {
    static func database(_ server: TestServer, folder: URL, log: ErrorLog) throws -> Canopy.Database {
        let database = Canopy.Database(
            url: "http://127.0.0.1:\(server.port)?ns=test", connector: Database.realtimeConnector, logger: log.logger)
        try database.configurePersistence(enabled: true, directory: folder)
        return database
    }

    /// Writes, reads back through a listener and checks the server has it: the app works.
    static func works(_ database: Canopy.Database, _ server: TestServer, value: Int) async throws {
        let seen = Recorder<Int>()
        let handle = database.reference(withPath: "works").observe(.value) { seen.record($0.value as? Int ?? -1) }
        let write: WriteStatus = database.reference(withPath: "works").setValue(value) { _, _ in }
        #expect(await seen.wait { $0.last == value }, "\(seen.all)")
        try await write.acknowledged
        #expect(try await ServerProbe.value(server, "works") == .number(Double(value)))
        database.reference(withPath: "works").removeObserver(withHandle: handle)
    }

    @Test func anUnwritableFolderOrACorruptFileLeavesTheAppInMemoryWithOneError() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { base in
                // A folder that cannot be created (its parent is a file).
                try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
                let blocker = base.appendingPathComponent("file")
                try Data("not a folder".utf8).write(to: blocker)
                let log = ErrorLog()
                let unwritable = try Self.database(server, folder: blocker.appendingPathComponent("canopy"), log: log)
                try await Self.works(unwritable, server, value: 1)
                #expect(unwritable.persistenceSize == nil)
                #expect(log.errors.count == 1 && log.errors[0].contains("persistence is off"), "\(log.errors)")
                unwritable.shutDown()

                // A file that is not a database.
                let corruptFolder = base.appendingPathComponent("corrupt")
                try FileManager.default.createDirectory(at: corruptFolder, withIntermediateDirectories: true)
                let file = corruptFolder.appendingPathComponent(
                    Canopy.Database.storeFileName(try unwritable.endpoint.get()))
                try Data(repeating: 0x5a, count: 8192).write(to: file)
                let corruptLog = ErrorLog()
                let corrupt = try Self.database(server, folder: corruptFolder, log: corruptLog)
                try await Self.works(corrupt, server, value: 2)
                #expect(corrupt.persistenceSize == nil)
                #expect(corruptLog.errors.count == 1, "\(corruptLog.errors)")
                #expect(try Data(contentsOf: file) == Data(repeating: 0x5a, count: 8192), "the file is left as it was")
                corrupt.shutDown()
            }
        }
    }

    @Test func aFullDiskInTheMiddleOfARunLogsOnceAndTheAppCarriesOnInMemory() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                let log = ErrorLog()
                let database = try Self.database(server, folder: folder, log: log)
                try await Self.works(database, server, value: 1)
                let before: WriteStatus = database.reference(withPath: "before").setValue("kept") { _, _ in }
                #expect(await before.isDurable)

                // The disk fills up: SQLite may not grow the file by a single page more.
                let store = try #require(database.repo?.persistence?.store as? SQLiteClientStore)
                try await store.database.write { db in
                    let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 1
                    try db.execute(sql: "PRAGMA max_page_count = \(pages)")
                }
                var big: [String: String] = [:]
                for index in 0..<50 { big["k\(index)"] = String(repeating: "x", count: 4096) }
                let failed: WriteStatus = database.reference(withPath: "big").setValue(big) { _, _ in }
                #expect(await !failed.isDurable, "not saved, and the app is told")
                try await failed.acknowledged
                for value in 2...4 { try await Self.works(database, server, value: value) }
                let after: WriteStatus = database.reference(withPath: "after").setValue(1) { _, _ in }
                #expect(await !after.isDurable)
                try await after.acknowledged
                #expect(database.persistenceSize == nil, "persistence is off for the rest of the run")
                #expect(log.errors.count == 1, "one error: \(log.errors)")
                #expect(log.errors.first?.contains("full") == true, "\(log.errors)")
                database.shutDown()
            }
        }
    }
}
