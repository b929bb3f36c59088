import GRDB
import GRDBSQLite

/// A statement from GRDB's statement cache, run directly through SQLite's C API.
///
/// The commit path runs a few short statements per write; GRDB's general argument handling
/// (`StatementArguments`, validation, observation hooks) costs more than SQLite's own work there, so
/// this binds text arguments and steps the statement itself (a one-leaf write went from about 12 to
/// 9 µs of CPU). Only for statements that change nothing GRDB tracks: plain `INSERT`/`DELETE`/
/// `SELECT` on our own tables inside a transaction GRDB opened, on GRDB's queue.
struct PreparedStatement {
    private let statement: Statement
    private let connection: SQLiteConnection?

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        connection = db.sqliteConnection
    }

    /// Runs the statement to completion with `arguments` bound to `?1`, `?2`, …
    func execute(_ arguments: String...) throws {
        _ = try step(arguments, readingInteger: false)
    }

    /// Runs the statement to completion with `first` and `second` bound to `?1` and `?2`, without
    /// SQLite copying either (a row's path and text, bound once for every row a commit writes).
    func execute(_ first: String, _ second: String) throws {
        var first = first
        var second = second
        let handle = statement.sqliteStatement
        try first.withUTF8 { first in
            try second.withUTF8 { second in
                sqlite3_reset(handle)
                // Unbound before the texts go: the statement must not keep pointers into them.
                defer {
                    sqlite3_reset(handle)
                    sqlite3_clear_bindings(handle)
                }
                try bind(first, to: 1, of: handle)
                try bind(second, to: 2, of: handle)
                let code = sqlite3_step(handle)
                guard code == SQLITE_DONE else { throw error(code) }
            }
        }
    }

    /// Binds `text` to parameter `index` where it lies (`SQLITE_STATIC`): it must stay there while bound.
    private func bind(_ text: UnsafeBufferPointer<UInt8>, to index: Int32, of handle: OpaquePointer?) throws {
        let code =
            if let base = text.baseAddress {
                sqlite3_bind_text(
                    handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(text.count), nil)
            } else {
                sqlite3_bind_text(handle, index, "", 0, transient)
            }
        guard code == SQLITE_OK else { throw error(code) }
    }

    /// Runs a query and returns its first column of its first row as a boolean (`false` without rows).
    func fetchBool(_ arguments: String...) throws -> Bool {
        try step(arguments, readingInteger: true) != 0
    }

    private func step(_ arguments: [String], readingInteger: Bool) throws -> Int32 {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        for (offset, argument) in arguments.enumerated() {
            let code = sqlite3_bind_text(handle, Int32(offset + 1), argument, -1, transient)
            guard code == SQLITE_OK else { throw error(code) }
        }
        defer { sqlite3_reset(handle) }
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_DONE: return 0
            case SQLITE_ROW: if readingInteger { return sqlite3_column_int(handle, 0) }
            default: throw error(code)
            }
        }
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = sqlite3_errmsg(connection).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}

/// SQLite copies the bound text (`SQLITE_TRANSIENT`): Swift's temporary C string does not outlive the call.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
