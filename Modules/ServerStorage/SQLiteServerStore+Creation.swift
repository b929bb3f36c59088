import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SQLiteServerStore {
    /// Makes a new database file at `path`, its format up to date and in WAL mode, whole or not at
    /// all: it is built beside `path` without a sync per step, synced once, and renamed into place.
    ///
    /// Opening a missing file and migrating it there took twelve syncs (the file's creation in
    /// rollback mode, then a commit per migration); this takes two (the file, its folder). On the
    /// project's VM a new namespace's first write took 4.3 ms before and 3.9 ms after on a quiet
    /// disk, 22 ms and 17 ms while another process synced the disk (BENCHMARKS.md). A crash
    /// part-way leaves only the `.creating` file, which the next creation replaces.
    ///
    /// Assumes no other store opens `path` meanwhile (a server opens each namespace once): the
    /// `-wal` and `-shm` files removed here then belong to no open database. Two servers on one
    /// data folder would break that, as they break much else; nothing prevents them yet.
    static func createFile(at path: String) throws {
        let building = path + ".creating"
        for leftover in [building, building + "-journal", path + "-wal", path + "-shm"] {
            // A log without its database (removed by hand) would be replayed into the new file.
            if unlink(leftover) != 0, errno != ENOENT { throw CreationFailure(step: "removing \(leftover)") }
        }
        var configuration = Configuration()
        configuration.label = "Canopy.SQLiteServerStore.creation"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        let database = try DatabaseQueue(path: building, configuration: configuration)
        try migrator.migrate(database)
        // Stored in the file: every later connection opens it in WAL mode.
        try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try database.close()
        try sync(building, step: "syncing \(building)")
        guard rename(building, path) == 0 else { throw CreationFailure(step: "renaming \(building) to \(path)") }
        try sync(URL(fileURLWithPath: path).deletingLastPathComponent().path, step: "syncing the folder of \(path)")
    }

    private static func sync(_ path: String, step: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw CreationFailure(step: step) }
        #if canImport(Glibc)
        defer { Glibc.close(descriptor) }
        #else
        defer { Darwin.close(descriptor) }
        #endif
        #if canImport(Darwin)
        // As `PRAGMA fullfsync` has SQLite do: a plain fsync leaves the data in the drive's cache.
        guard fcntl(descriptor, F_FULLFSYNC) != -1 || fsync(descriptor) == 0 else {
            throw CreationFailure(step: step)
        }
        #else
        guard fsync(descriptor) == 0 else { throw CreationFailure(step: step) }
        #endif
    }

    /// A step of ``createFile(at:)`` that failed, with the system's reason.
    struct CreationFailure: Error, CustomStringConvertible {
        let step: String
        let reason = String(cString: strerror(errno))

        var description: String { "\(step) failed: \(reason)" }
    }
}
