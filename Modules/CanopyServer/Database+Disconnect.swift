import Logging
import Persistence
import Presence
import Rules
import ServerStorage
import Tree

/// onDisconnect operations kept in a store that several processes share (PostgreSQL): stored
/// before they are acknowledged, removed in the transaction of the writes they make, and run by
/// the process that opens the namespace next when the one holding the connection died.
extension Database {
    /// Stores `session`'s onDisconnect operations and the caller they run as, as `current` gives
    /// them when the change is submitted (none: removes them; `nil`, the connection ran them
    /// already: nothing), after every write applied before; returns why the store refused, or
    /// `nil` once they are durable.
    ///
    /// `current` is read in this database's turn, so changes of one connection are submitted in
    /// order, each with what the connection holds then: a registration and a credential expiry
    /// racing to store cannot leave the earlier caller or operations as the last ones stored, and
    /// one arriving after the connection ran its operations cannot store them again.
    func storeDisconnectOperations(
        session: String, current: @Sendable () -> (operations: [DisconnectOperation], caller: Caller)?
    ) async -> StoreError? {
        guard let (operations, caller) = current() else { return nil }
        let change: DisconnectChange =
            operations.isEmpty
            ? .remove(session: session)
            : .store(StoredDisconnect(session: session, operations: Self.record(operations, caller: caller)))
        return await withCheckedContinuation { (stored: CheckedContinuation<StoreError?, Never>) in
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
