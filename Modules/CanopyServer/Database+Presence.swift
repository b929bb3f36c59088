import Logging
import Presence
import ServerStorage
import Tree

/// The database a connection's onDisconnect operations run on (see ``ConnectionPresence``).
///
/// Where the store keeps them (PostgreSQL, shared by several processes), they are stored before
/// they are acknowledged, removed in the transaction of the writes they make, and run by the
/// process that opens the namespace next when the one holding the connection died.
extension Database: DisconnectDatabase {
    /// Stores `session`'s record as `current` gives it when the change is submitted (no operations
    /// left: removes it; `nil`, the connection ran them already: nothing), after every write applied
    /// before; returns why the store refused, or `nil` once it is durable.
    ///
    /// `current` is read in this database's turn, so changes of one connection are submitted in
    /// order, each with what the connection holds then.
    func keep(session: String, current: @Sendable () -> DisconnectRecord<Caller>?) async -> (any Error)? {
        guard let record = current() else { return nil }
        let change: DisconnectChange =
            record.operations.isEmpty
            ? .remove(session: session)
            : .store(StoredDisconnect(session: session, operations: record.json))
        let error = await withCheckedContinuation { (stored: CheckedContinuation<(any Error)?, Never>) in
            submitDisconnectChanges([change]) { result in
                switch result {
                case .success: stored.resume(returning: nil)
                case .failure(let error): stored.resume(returning: error)
                }
            }
        }
        if let error {
            logger.warning(
                "could not store onDisconnect operations", metadata: ["session": "\(session)", "error": "\(error)"])
        }
        return error
    }

    /// Runs a connection's onDisconnect operations as the record's caller, in one turn: their writes
    /// commit together, and with them the removal of the record stored for `session` (when the
    /// store keeps them), so that they run exactly once even if the process dies meanwhile.
    ///
    /// They are taken however far behind the store is (a connection's are bounded by
    /// `--max-on-disconnect-bytes`): refusing them would lose them.
    func run(_ record: DisconnectRecord<Caller>, session: String?) {
        // A namespace another process took over writes nothing: the stored operations are left
        // for that process, which runs them when it opens the namespace.
        if steppedDown && keepsDisconnectRecords { return }
        let (logger, caller) = (logger, record.identity)
        let writes: [DatabaseWrite] = record.operations.map { operation in
            let reply: @Sendable (WriteOutcome) -> Void = { outcome in
                if case .rejected(let error) = outcome {
                    logger.warning(
                        "onDisconnect write failed", metadata: ["path": "\(operation.path)", "error": "\(error)"])
                }
            }
            return DatabaseWrite { database in
                switch operation.kind {
                case .set(let json): database.set(operation.path, json: json, as: caller, reply: reply)
                case .update(let members):
                    database.update(operation.path, json: .object(members), as: caller, reply: reply)
                }
            }
        }
        let removal: [DisconnectChange] =
            if keepsDisconnectRecords, let session { [.remove(session: session)] } else { [] }
        RequestTransport.$current.withValue(.disconnect) { performPastBacklog(writes, disconnects: removal) }
    }

    /// Runs the operations stored for connections that no process serves any more, each session's
    /// writes committed with the removal of its record. Called once at open, before any client
    /// is served, so they commit before every write made afterwards.
    func runStoredDisconnects() {
        let stored = takeStoredDisconnects()
        for stored in stored {
            guard let record = DisconnectRecord<Caller>(json: stored.operations) else {
                logger.error(
                    "dropped unreadable stored onDisconnect operations",
                    metadata: ["namespace": "\(name)", "session": "\(stored.session)"])
                submitDisconnectChanges([.remove(session: stored.session)]) { _ in }
                continue
            }
            logger.info(
                "running the onDisconnect operations of a connection no process serves any more",
                metadata: [
                    "namespace": "\(name)", "session": "\(stored.session)", "operations": "\(record.operations.count)",
                ])
            run(record, session: stored.session)
        }
    }
}
