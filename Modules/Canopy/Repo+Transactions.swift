import ClientCache
import Dispatch
import Query
import SyncEngine
import Synchronization
import Transport
import Tree

/// A transaction's completion block: the error, whether it committed, the data it ended with.
typealias TransactionCompletion = @isolated(any) @Sendable ((any Error)?, Bool, DataSnapshot?) -> Void

/// A transaction in progress.
struct TransactionState: Sendable {
    let path: Path
    let ref: DatabaseReference
    let update: @Sendable (MutableData) -> TransactionResult
    /// The name its update block is registered under, for a transaction kept on the device.
    var name: String?
    /// The app's completion block, isolated where it was written.
    let completion: TransactionCompletion
    let applyLocally: Bool
    /// Keeps the location synced while the transaction runs, so a `datastale` rerun sees fresh data.
    let observer: DatabaseHandle
    var retries = 0
    /// The local write of the current attempt, and what it wrote.
    var writeID: Int?
    var output: Node?
    /// Part of the put in flight.
    var sent = false
    /// Set when a `setValue` wrote over the location while the put was in flight.
    var overridden = false
}

extension Repo {
    /// Runs `update` on the current data at `ref` and writes its result with a compare-and-set;
    /// reruns it on fresh data when the server's data differed (`datastale`), up to 25 times.
    ///
    /// As the official clients do, the transactions of one client at one location form a queue:
    /// each runs on the output of the one before, and all of them go to the server in one put
    /// (compared against the data the first ran on), so a client's own transactions never compete
    /// with each other.
    ///
    /// A transaction with a `name` (its block registered in ``transactionBlocks``) is also kept on
    /// the device when persistence is on, with the put it was last sent in, until it finishes.
    func runTransaction(
        at ref: DatabaseReference, update: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: @escaping TransactionCompletion, applyLocally: Bool, name: String? = nil,
        argument: JSONValue = .null
    ) {
        let observer = addObserver(query: ref, types: [.value], callback: .none, cancel: nil, once: false)
        state.withLock { state in
            let id = state.nextTransactionID
            state.nextTransactionID += 1
            state.transactions[id] = TransactionState(
                path: ref.path, ref: ref, update: update, name: name, completion: completion,
                applyLocally: applyLocally, observer: observer)
            if let name {
                persistence?.saveTransaction(
                    PersistedTransaction(
                        id: id, path: ref.path, name: name, argument: argument, applyLocally: applyLocally))
            }
        }
        sendTransactions(at: ref.path)
    }

    /// Runs the transaction whose block is registered as `name`.
    func runTransaction(
        at ref: DatabaseReference, named name: String, argument: JSONValue,
        completion: @escaping TransactionCompletion, applyLocally: Bool
    ) {
        guard transactionBlocks.isRegistered(name) else {
            let callbacks = state.withLock { $0.callbacks }
            callbacks.deliver(completion, DatabaseError.transactionNotRegistered(name), false, nil)
            return
        }
        runTransaction(
            at: ref, update: Self.registeredBlock(name, argument: argument, in: transactionBlocks),
            completion: completion, applyLocally: applyLocally, name: name, argument: argument)
    }

    /// The block registered as `name`, looked up when it runs (a queue does not run while one of its
    /// transactions' blocks is not registered).
    private static func registeredBlock(
        _ name: String, argument: JSONValue, in registry: TransactionRegistry
    ) -> @Sendable (MutableData) -> TransactionResult {
        { data in registry.block(named: name)?(data, argument) ?? .abort() }
    }

    /// Transactions kept from an earlier run: each waits for its block to be registered, then runs
    /// as it would have; one whose put was sent is resent as it was, under the same write id, on the
    /// first connection (before anything new), so the server applies it at most once.
    func restoreTransactions(_ restored: [PersistedTransaction], reference: (Path) -> DatabaseReference) {
        guard !restored.isEmpty else { return }
        var observers: [Int: DatabaseHandle] = [:]
        for transaction in restored {
            observers[transaction.id] = addObserver(
                query: reference(transaction.path), types: [.value], callback: .none, cancel: nil, once: false)
        }
        state.withLock { state in
            // The put in flight at each location is the last one sent there.
            var inFlight: [Path: PersistedTransaction.Put] = [:]
            for transaction in restored {
                guard let put = transaction.put else { continue }
                if put.writeID > inFlight[transaction.path]?.writeID ?? -1 { inFlight[transaction.path] = put }
            }
            var putIDs: [Path: [Int]] = [:]
            for transaction in restored {
                guard let observer = observers[transaction.id] else { continue }
                var entry = TransactionState(
                    path: transaction.path, ref: reference(transaction.path),
                    update: Self.registeredBlock(
                        transaction.name, argument: transaction.argument, in: transactionBlocks),
                    name: transaction.name,
                    completion: { _, _, _ in }, applyLocally: transaction.applyLocally, observer: observer)
                if let put = transaction.put, put.writeID == inFlight[transaction.path]?.writeID,
                    let node = try? Node(json: put.value)
                {
                    let writeID = state.nextWriteID
                    state.nextWriteID += 1
                    _ = state.tree.applyUserOverwrite(
                        node, at: transaction.path, writeID: writeID, visible: transaction.applyLocally)
                    entry.writeID = writeID
                    entry.output = node
                    entry.sent = true
                    putIDs[transaction.path, default: []].append(transaction.id)
                }
                state.transactions[transaction.id] = entry
                state.nextTransactionID = max(state.nextTransactionID, transaction.id + 1)
            }
            for (path, put) in inFlight {
                state.transactionPuts[path] = TransactionPut(
                    action: .put(path: path.wireString, data: put.value, hash: put.hash), sequence: put.writeID,
                    ids: putIDs[path] ?? [])
            }
        }
    }

    /// The app registered the block `name`: kept transactions waiting for it run.
    func transactionRegistered(_ name: String) {
        let paths = state.withLock { state in
            Set(state.transactions.values.filter { $0.name == name && !$0.sent }.map(\.path))
        }
        for path in paths { sendTransactions(at: path) }
    }

    /// Runs and sends the queue at `path`, unless a put of it is already in flight.
    func sendTransactions(at path: Path) {
        // Take the queue and the data it starts from; earlier attempts' local writes are reverted.
        guard
            let (ids, base) = state.withLock({ state -> ([Int], Node)? in
                let queue = state.transactions.filter { $0.value.path == path }.sorted { $0.key < $1.key }
                guard !queue.isEmpty, !queue.contains(where: { $0.value.sent }),
                    queue.allSatisfy({ $0.value.name.map(transactionBlocks.isRegistered) ?? true }),
                    state.transactionRuns.insert(path).inserted
                else { return nil }
                for (id, transaction) in queue {
                    if let writeID = transaction.writeID {
                        dispatch(state.tree.ackUserWrite(writeID: writeID, revert: true), in: &state)
                        state.transactions[id]?.writeID = nil
                    }
                    state.transactions[id]?.output = nil
                }
                return (queue.map(\.key), state.tree.completeEventCache(at: path))
            })
        else { return }
        // Update blocks run outside the lock, each on the output of the one before.
        var input = base
        var outputs: [(id: Int, result: Node?, problem: DatabaseError?)] = []
        for id in ids {
            guard let update = state.withLock({ $0.transactions[id]?.update }) else { continue }
            let data = MutableData(node: input)
            let result = update(data)
            if let written = result.data {
                if let problem = written.root.problem {
                    outputs.append((id, nil, problem))
                } else {
                    input = written.root.node
                    outputs.append((id, written.root.node, nil))
                }
            } else {
                outputs.append((id, nil, nil))
            }
        }
        let runAgain = state.withLock { state -> Bool in
            defer { state.transactionRuns.remove(path) }
            var last: Node?
            var sentIDs: [Int] = []
            for (id, result, problem) in outputs {
                guard var transaction = state.transactions[id] else { continue }
                guard let result else {
                    finish(
                        id, error: problem, committed: false, node: state.tree.completeEventCache(at: path), in: &state)
                    continue
                }
                let writeID = state.nextWriteID
                state.nextWriteID += 1
                transaction.writeID = writeID
                transaction.output = result
                transaction.overridden = false
                dispatch(
                    state.tree.applyUserOverwrite(
                        result, at: path, writeID: writeID, visible: transaction.applyLocally),
                    in: &state)
                state.transactions[id] = transaction
                sentIDs.append(id)
                last = result
            }
            guard let last else {
                // Everything aborted; transactions queued meanwhile still need a run.
                return state.transactions.values.contains { $0.path == path }
            }
            let data = last.json(exportFormat: true)
            let action = ClientAction.put(path: path.wireString, data: data, hash: base.hash)
            let put = TransactionPut(action: action, sequence: state.nextWriteID - 1, ids: sentIDs)
            let kept = sentIDs.filter { state.transactions[$0]?.name != nil }
            if !kept.isEmpty {
                // Saved (and synced to disk) before it is sent, and in write-id order with
                // everything else sent: after a restart it is resent as it was, never run again on
                // top of itself.
                persistence?.saveTransactionPut(
                    PersistedTransaction.Put(writeID: put.sequence, value: data, hash: base.hash), ids: kept)
            }
            let sent = sendTransactionPut(put, at: path, in: &state)
            for id in sentIDs { state.transactions[id]?.sent = sent }
            return false
        }
        if runAgain { sendTransactions(at: path) }
    }

    /// Sends a queue's compare-and-set; while it is in flight it is kept, to be resent as it was if
    /// the connection is lost before its answer.
    func sendTransactionPut(_ put: TransactionPut, at path: Path, in state: inout State) -> Bool {
        guard writesMayGo(state) else { return false }
        let sent = send(put.action, writeID: put.sequence, in: &state) { [self] outcome in
            answered(put.ids, at: path, outcome: outcome)
        }
        if sent {
            var put = put
            put.sentOnLink = state.linkNumber
            state.transactionPuts[path] = put
        }
        return sent
    }

    /// After a reconnect, for a server that does not take write ids: the queue whose put was cut off
    /// runs again on fresh data, as the official clients do (so it may apply twice).
    func forgetTransactionPut(at path: Path, in state: inout State) {
        guard let put = state.transactionPuts.removeValue(forKey: path) else { return }
        for id in put.ids { state.transactions[id]?.sent = false }
    }

    private func answered(_ ids: [Int], at path: Path, outcome: RequestOutcome) {
        let rerun = state.withLock { state -> Bool in
            // Resent as it was on the next connection (see `opened`).
            guard case .answered(let status, let data) = outcome else { return false }
            state.transactionPuts[path] = nil
            for id in ids { state.transactions[id]?.sent = false }
            switch status {
            case .ok:
                for id in ids {
                    guard let transaction = state.transactions[id], let writeID = transaction.writeID else { continue }
                    dispatch(state.tree.ackUserWrite(writeID: writeID), in: &state)
                    state.transactions[id]?.writeID = nil
                    finish(id, error: nil, committed: true, node: transaction.output ?? .empty, in: &state)
                }
                // Transactions queued while this put was in flight go next.
                return true
            case .dataStale:
                for id in ids {
                    guard var transaction = state.transactions[id] else { continue }
                    transaction.retries += 1
                    state.transactions[id] = transaction
                    let current = state.tree.completeEventCache(at: path)
                    if transaction.overridden {
                        finish(
                            id, error: DatabaseError.transactionOverriddenBySet, committed: false, node: current,
                            in: &state)
                    } else if transaction.retries >= 25 {
                        finish(
                            id, error: DatabaseError.transactionMaxRetries, committed: false, node: current, in: &state)
                    }
                }
                return true
            default:
                let error = RequestOutcome.error(for: status, data: data)
                for id in ids {
                    finish(
                        id, error: error, committed: false, node: state.tree.completeEventCache(at: path), in: &state)
                }
                return true
            }
        }
        if rerun { sendTransactions(at: path) }
    }

    /// Ends transaction `id`: its pending write (if any) is reverted, its observer removed and its
    /// completion told, with a snapshot of `node`.
    private func finish(_ id: Int, error: (any Error)?, committed: Bool, node: Node, in state: inout State) {
        guard let transaction = state.transactions.removeValue(forKey: id) else { return }
        if transaction.name != nil { persistence?.removeTransaction(id: id) }
        if let writeID = transaction.writeID {
            dispatch(state.tree.ackUserWrite(writeID: writeID, revert: true), in: &state)
        }
        let snapshot = DataSnapshot(ref: transaction.ref, node: node)
        state.callbacks.deliver(transaction.completion, error, committed, snapshot)
        settleWriteWaiters(in: &state)
        let observer = transaction.observer
        Task { [self] in removeObserver(observer) }
    }

    /// A `setValue` or update wrote at `path`: transactions at, above or below it are overridden
    /// (at once when not in flight, on the server's answer when they are).
    func abortTransactions(overlapping path: Path, in state: inout State) {
        for (id, transaction) in state.transactions
        where transaction.path.contains(path) || path.contains(transaction.path) {
            if transaction.sent {
                state.transactions[id]?.overridden = true
            } else {
                finish(
                    id, error: DatabaseError.transactionOverriddenBySet, committed: false,
                    node: state.tree.completeEventCache(at: transaction.path), in: &state)
            }
        }
    }

    /// After a reconnect: queues that were not sent (or whose put was forgotten) run on fresh data.
    func rerunUnsentTransactions() {
        let paths = state.withLock { state in Set(state.transactions.values.map(\.path)) }
        for path in paths { sendTransactions(at: path) }
    }
}
