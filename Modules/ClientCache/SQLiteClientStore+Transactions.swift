import GRDB
public import Persistence
import Tree

extension SQLiteClientStore {
    public func saveTransaction(_ transaction: PersistedTransaction) throws(StoreError) {
        try write("saving transaction \(transaction.id)", durable: true) { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO transactions
                        (id, path, name, argument, apply_locally, put_write_id, put_value, put_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    transaction.id, transaction.path.wireString, transaction.name, transaction.argument.serialized(),
                    transaction.applyLocally,
                    transaction.put?.writeID, transaction.put?.value.serialized(), transaction.put?.hash,
                ])
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    public func saveTransactionPut(_ put: PersistedTransaction.Put, ids: [Int]) throws(StoreError) {
        try write("saving the put of transactions \(ids)", durable: true) { db in
            let value = put.value.serialized()
            for id in ids {
                try db.execute(
                    sql: "UPDATE transactions SET put_write_id = ?, put_value = ?, put_hash = ? WHERE id = ?",
                    arguments: [put.writeID, value, put.hash, id])
            }
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    public func removeTransaction(id: Int) throws(StoreError) {
        try write("removing transaction \(id)") { db in
            try db.execute(sql: "DELETE FROM transactions WHERE id = ?", arguments: [id])
            return ClientStoreSize(serverCache: 0, pendingWrites: 0)
        }
    }

    public func transactions() throws(StoreError) -> [PersistedTransaction] {
        let rows = try read("reading the transactions") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, path, name, argument, apply_locally, put_write_id, put_value, put_hash
                    FROM transactions ORDER BY id
                    """)
        }
        return try rows.map { row throws(StoreError) in
            let id: Int = row["id"]
            do {
                var put: PersistedTransaction.Put?
                if let writeID = row["put_write_id"] as Int?, let value = row["put_value"] as String?,
                    let hash = row["put_hash"] as String?
                {
                    put = PersistedTransaction.Put(writeID: writeID, value: try JSONValue(parsing: value), hash: hash)
                }
                return PersistedTransaction(
                    id: id, path: try Path(validating: row["path"] as String), name: row["name"],
                    argument: try JSONValue(parsing: row["argument"] as String), applyLocally: row["apply_locally"],
                    put: put)
            } catch {
                throw .corruptData(file: self.path, row: "transactions/\(id)", reason: "\(error)")
            }
        }
    }
}
