import Foundation
import GRDB
import Persistence
import ServerStorage
import Testing
import Tree

/// A namespace's file is made whole beside its place and renamed into it (one sync for the file,
/// one for its folder, instead of one per migration).
struct SQLiteServerStoreCreationTests {
    @Test func aNewFileIsInWALModeWithEveryMigrationAndNothingLeftBeside() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.commit([try StoredWrite("a", 1)])
            try store.close()
            let reader = try DatabaseQueue(path: file)
            defer { try? reader.close() }
            let (mode, migrations) = try reader.read { db in
                (
                    try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                    try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                )
            }
            #expect(mode == "wal")
            #expect(migrations == ["v1", "v2-quarantine", "v3-write-ids", "v4-packed-records"])
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent().path
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(!names.contains { $0.contains(".creating") }, "\(names)")
        }
    }

    @Test func aCreationCutShortIsReplaced() async throws {
        try await withStoreFile { file in
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // What a crash while building the file leaves.
            try Data("not a database".utf8).write(to: URL(fileURLWithPath: file + ".creating"))
            try Data("not a journal".utf8).write(to: URL(fileURLWithPath: file + ".creating-journal"))
            let tree = try Node(json: ["users": ["ada": ["age": 36]]])
            do {
                let store = try SQLiteServerStore(path: file)
                try store.commit([StoredWrite(path: .root, node: tree)])
            }
            #expect(try SQLiteServerStore(path: file).loadTree() == tree)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(!names.contains { $0.contains(".creating") }, "\(names)")
        }
    }

    /// A log whose database was removed by hand belongs to that database: replayed into the new
    /// file, it would bring the old data back.
    @Test func aLogLeftWithoutItsFileIsNotReplayedIntoTheNewOne() async throws {
        try await withStoreFile { file in
            let old = file + ".old"
            let oldStore = try SQLiteServerStore(path: old)
            defer { try? oldStore.close() }
            try oldStore.commit([try StoredWrite("secret", "from the old file")])
            // Its log still holds the commit (a checkpoint comes only after 1,000 pages).
            try FileManager.default.copyItem(atPath: old + "-wal", toPath: file + "-wal")
            let store = try SQLiteServerStore(path: file)
            #expect(try store.loadTree() == .empty)
            try store.commit([try StoredWrite("a", 1)])
            #expect(try SQLiteServerStore(path: file).loadTree() == (try Node(json: ["a": 1])))
        }
    }
}
