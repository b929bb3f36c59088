import Logging
import Persistence
import Presence
import Rules
import Tree

/// onDisconnect operations kept in a store that several processes share (PostgreSQL): stored
/// before they are acknowledged, removed in the transaction of the writes they make, and run by
/// the process that opens the namespace next when the one holding the connection died.
extension Database {
    /// Stores `operations` as `session`'s onDisconnect operations (none: removes them), after
    /// every write applied before; returns why the store refused, or `nil` once they are durable.
    func storeDisconnectOperations(
        _ operations: [DisconnectOperation], session: String, caller: Caller
    ) async -> (any Error)? {
        let change: DisconnectChange =
            operations.isEmpty
            ? .remove(session: session)
            : .store(StoredDisconnect(session: session, operations: Self.record(operations, caller: caller)))
        return await withCheckedContinuation { (stored: CheckedContinuation<(any Error)?, Never>) in
            submitDisconnectChanges([change]) { result in
                switch result {
                case .success: stored.resume(returning: nil)
                case .failure(let error): stored.resume(returning: error)
                }
            }
        }
    }

    /// Runs the operations stored for connections that no process serves any more, each session's
    /// writes committed with the removal of its record. Called once at open, before any client
    /// is served, so they commit before every write made afterwards.
    func runStoredDisconnects() {
        let stored = takeStoredDisconnects()
        for record in stored {
            guard let (operations, caller) = Self.operations(in: record.operations) else {
                logger.error(
                    "dropped unreadable stored onDisconnect operations",
                    metadata: ["namespace": "\(name)", "session": "\(record.session)"])
                submitDisconnectChanges([.remove(session: record.session)]) { _ in }
                continue
            }
            logger.info(
                "running the onDisconnect operations of a connection no process serves any more",
                metadata: ["namespace": "\(name)", "session": "\(record.session)", "operations": "\(operations.count)"])
            runDisconnectWrites(operations, as: caller, session: record.session)
        }
    }

    /// `{"operations": [...], "auth": <auth variable>}`, with `"admin": true` for the admin.
    static func record(_ operations: [DisconnectOperation], caller: Caller) -> JSONValue {
        var record: [String: JSONValue] = ["operations": .array(operations.map(\.json))]
        switch caller {
        case .admin: record["admin"] = true
        case .user(let auth?): record["auth"] = auth.variable.json()
        case .user(nil): break
        }
        return .object(record)
    }

    /// What ``record(_:caller:)`` wrote; `nil` when it does not read.
    static func operations(in record: JSONValue) -> ([DisconnectOperation], Caller)? {
        guard case .array(let items)? = record["operations"] else { return nil }
        var operations: [DisconnectOperation] = []
        for item in items {
            guard let operation = DisconnectOperation(json: item) else { return nil }
            operations.append(operation)
        }
        let caller: Caller =
            if record["admin"]?.boolValue == true { .admin } else { .user(record["auth"].map(AuthContext.init(json:))) }
        return (operations, caller)
    }
}
