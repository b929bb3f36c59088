import GRDB
import Logging
public import Persistence

extension SQLiteServerStore {
    /// The rows of `write_ids`, least recently seen client first. A row that does not read back is
    /// logged and left out: that client's resends run again, as without write ids.
    public func storedWriteIDs() throws(StoreError) -> [StoredWriteIDs] {
        let rows: [(client: String, highest: Int64, notApplied: String?, seen: Int64)]
        do {
            rows = try whileOpen { database in
                try database.read { db in
                    try Row.fetchAll(
                        db, sql: "SELECT client, highest, not_applied, seen FROM write_ids ORDER BY seen, client"
                    )
                    .map { (client: $0[0], highest: $0[1], notApplied: $0[2], seen: $0[3]) }
                }
            }
        } catch {
            throw failure("reading the write ids", error)
        }
        return rows.compactMap { row in
            do throws(WriteIDsFormatError) {
                return StoredWriteIDs(
                    client: row.client, highest: Int(row.highest),
                    notApplied: try StoredWriteIDs.notApplied(parsing: row.notApplied), seen: row.seen)
            } catch {
                logger.error(
                    "left out the unreadable write ids of a client; its resent writes run again",
                    metadata: ["file": "\(path)", "client": "\(row.client)", "reason": "\(error)"])
                return nil
            }
        }
    }

    /// Applies `changes` to `write_ids` inside the commit's transaction: one statement per client.
    static func apply(_ changes: [WriteIDChange], in db: Database) throws {
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO write_ids (client, highest, not_applied, seen) VALUES (?, ?, ?, ?)
                ON CONFLICT (client) DO UPDATE SET
                    highest = excluded.highest, not_applied = excluded.not_applied, seen = excluded.seen
                """)
        let forget = try db.cachedStatement(sql: "DELETE FROM write_ids WHERE client = ?")
        for change in changes {
            switch change {
            case .store(let ids):
                try upsert.execute(arguments: [ids.client, Int64(ids.highest), ids.notAppliedText, ids.seen])
            case .forget(let client):
                try forget.execute(arguments: [client])
            }
        }
    }
}
