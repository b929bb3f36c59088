import ClientCache
import Dispatch
import Foundation
import Logging
import Query
import SyncEngine
import Synchronization
import Transport
import Tree

extension Repo {
    /// Validates `json` as a write at `path` and resolves its server values with this client's
    /// estimate of the server's clock (for the optimistic events; the server resolves them again).
    func node(
        _ json: JSONValue, at path: Path, in state: State, existing known: Node? = nil
    ) throws(DatabaseError) -> Node {
        do {
            let existing = json.containsServerValue ? known ?? state.tree.completeEventCache(at: path) : .empty
            return try Node(
                json: json, at: path, existing: existing, serverValues: ServerValueContext(now: serverTime(state)))
        } catch {
            throw Self.databaseError(error, at: path)
        }
    }

    static func databaseError(_ error: TreeError, at path: Path) -> DatabaseError {
        if case .invalidPath(let text, let reason) = error { return .invalidPath(text, reason: reason) }
        return .invalidValue("/" + path.wireString, reason: error.description)
    }

    /// Hands `error` (or success) to `completion`'s callback. Call under the lock.
    func complete(_ completion: Completion, with error: DatabaseError?, in state: State) {
        completion(error, state.callbacks)
    }

    /// `setValue`: raises local events at once, then sends the write; `completion` learns the
    /// server's answer.
    func set(
        _ json: JSONValue, at path: Path, status: WriteStatus,
        completion: @escaping Completion
    ) {
        state.withLock { state in
            let node: Node
            do throws(DatabaseError) {
                node = try self.node(json, at: path, in: state)
            } catch {
                status.finish(error)
                complete(completion, with: error, in: state)
                return
            }
            abortTransactions(overlapping: path, in: &state)
            let id = state.nextWriteID
            state.nextWriteID += 1
            let events = state.tree.applyUserOverwrite(node, at: path, writeID: id)
            state.writes[id] = PendingWrite(
                action: .put(path: path.wireString, data: json, hash: nil), completion: completion,
                written: [path: node], status: status)
            save(PersistedWrite(id: id, path: path, isMerge: false, json: json), status: status)
            sendWrite(id, in: &state)
            dispatch(events, in: &state)
        }
    }

    /// `updateChildValues`: each member is a path relative to `path`.
    func update(
        _ members: [String: JSONValue], at path: Path, status: WriteStatus,
        completion: @escaping Completion
    ) {
        state.withLock { state in
            var children: [Path: Node] = [:]
            do throws(DatabaseError) {
                for (key, value) in members {
                    let relative: Path
                    do throws(TreeError) {
                        relative = try Path(validating: key)
                    } catch {
                        throw Self.databaseError(error, at: path)
                    }
                    children[relative] = try self.node(value, at: path.child(relative), in: state)
                }
                do throws(TreeError) {
                    try UpdateValidation.checkNoOverlap(children.keys)
                } catch {
                    throw Self.databaseError(error, at: path)
                }
            } catch {
                status.finish(error)
                complete(completion, with: error, in: state)
                return
            }
            if children.isEmpty {
                status.markDurable(false)
                status.finish(nil)
                complete(completion, with: nil, in: state)
                return
            }
            for relative in children.keys { abortTransactions(overlapping: path.child(relative), in: &state) }
            let id = state.nextWriteID
            state.nextWriteID += 1
            let events = state.tree.applyUserMerge(children, at: path, writeID: id)
            state.writes[id] = PendingWrite(
                action: .merge(path: path.wireString, data: .object(members)), completion: completion,
                written: Dictionary(uniqueKeysWithValues: children.map { (path.child($0.key), $0.value) }),
                status: status)
            save(PersistedWrite(id: id, path: path, isMerge: true, json: .object(members)), status: status)
            sendWrite(id, in: &state)
            dispatch(events, in: &state)
        }
    }

    /// Writes kept from an earlier run: applied locally again (server values resolved now) and
    /// queued to be sent, in id order; later writes are numbered after them.
    func restoreWrites(_ writes: [PersistedWrite]) {
        guard let persistence else { return }
        state.withLock { state in
            // No listener holds data yet: server values resolve against the data kept on the
            // device, with the writes restored before laid over it.
            func existing(at path: Path) -> Node {
                let cached = persistence.serverCache(for: QuerySpec(path: path)).node
                return state.tree.pendingWrites.completeEventCache(
                    at: path, serverCache: cached, includeHiddenWrites: true) ?? cached
            }
            for write in writes {
                let action: ClientAction
                var written: [Path: Node] = [:]
                do throws(DatabaseError) {
                    if write.isMerge, case .object(let members) = write.json {
                        var children: [Path: Node] = [:]
                        for (key, value) in members {
                            let relative = Path(key)
                            let absolute = write.path.child(relative)
                            children[relative] = try self.node(
                                value, at: absolute, in: state, existing: existing(at: absolute))
                            written[absolute] = children[relative]
                        }
                        _ = state.tree.applyUserMerge(children, at: write.path, writeID: write.id)
                        action = .merge(path: write.path.wireString, data: write.json)
                    } else {
                        let resolved = try self.node(
                            write.json, at: write.path, in: state, existing: existing(at: write.path))
                        _ = state.tree.applyUserOverwrite(resolved, at: write.path, writeID: write.id)
                        written[write.path] = resolved
                        action = .put(path: write.path.wireString, data: write.json, hash: nil)
                    }
                } catch {
                    logger.error("dropping a stored write that is no longer valid: \(error)")
                    persistence.removeWrite(id: write.id, acknowledged: [:])
                    continue
                }
                let status = WriteStatus(path: "/" + write.path.wireString)
                status.markDurable(true)
                state.writes[write.id] = PendingWrite(
                    action: action, completion: { _, _ in }, written: written, status: status)
                state.nextWriteID = max(state.nextWriteID, write.id + 1)
            }
        }
    }

    /// Saves a new write on the device, when persistence is on; `status` learns whether it was.
    private func save(_ write: PersistedWrite, status: WriteStatus) {
        guard let persistence else {
            status.markDurable(false)
            return
        }
        persistence.saveWrite(write) { saved in status.markDurable(saved) }
    }

    /// Sends write `id` if connected (and authenticated when it has a token); otherwise it waits.
    func sendWrite(_ id: Int, in state: inout State) {
        guard let write = state.writes[id], writesMayGo(state) else { return }
        let sent = send(write.action, writeID: id, in: &state) { [self] outcome in
            // A write cut off by a lost connection is sent again, in order, on the next one.
            guard case .answered(let status, let data) = outcome else { return }
            writeAnswered(id, status: status, data: data)
        }
        if sent { state.writes[id]?.sentOnLink = state.linkNumber }
    }

    private func writeAnswered(_ id: Int, status: ResponseStatus, data: JSONValue) {
        state.withLock { state in
            guard let write = state.writes.removeValue(forKey: id) else { return }
            persistence?.removeWrite(id: id, acknowledged: status == .ok ? write.written : [:])
            let events = state.tree.ackUserWrite(writeID: id, revert: status != .ok)
            dispatch(events, in: &state)
            let error = RequestOutcome.error(for: status, data: data)
            write.status.finish(error)
            complete(write.completion, with: error, in: state)
            settleWriteWaiters(in: &state)
        }
    }

    /// `purgeOutstandingWrites()`: forgets every write not yet acknowledged; their local events are
    /// reverted and their completions get ``DatabaseError/writeCanceled``.
    func purgeOutstandingWrites() {
        state.withLock { state in
            for id in state.writes.keys.sorted() {
                guard let write = state.writes.removeValue(forKey: id) else { continue }
                persistence?.removeWrite(id: id, acknowledged: [:])
                write.status.finish(.writeCanceled)
                dispatch(state.tree.ackUserWrite(writeID: id, revert: true), in: &state)
                complete(write.completion, with: .writeCanceled, in: state)
            }
            settleWriteWaiters(in: &state)
        }
    }

    // MARK: onDisconnect

    /// Registers an onDisconnect operation with the server (now, or once connected). Once the
    /// server accepted it, the client also applies it locally if the connection is lost.
    func onDisconnect(_ action: ClientAction, completion: @escaping Completion) {
        state.withLock { state in sendOrQueue(disconnectRequest(action, completion: completion), in: &state) }
    }

    /// The request for an onDisconnect operation; one cut off by a lost connection is queued again,
    /// with the same completion, for the next connection.
    private func disconnectRequest(
        _ action: ClientAction, completion: @escaping Completion
    ) -> QueuedRequest {
        QueuedRequest(action: action) { [self] outcome in
            state.withLock { state in
                guard case .answered(let status, let data) = outcome else {
                    state.queued.append(disconnectRequest(action, completion: completion))
                    return
                }
                if status == .ok { recordLocally(action, in: &state) }
                let error = RequestOutcome.error(for: status, data: data)
                complete(completion, with: error, in: state)
            }
        }
    }

    func sendOrQueue(_ request: QueuedRequest, in state: inout State) {
        if !send(request.action, in: &state, answer: request.completion) { state.queued.append(request) }
    }

    private func recordLocally(_ action: ClientAction, in state: inout State) {
        switch action {
        case .onDisconnectPut(let path, let data):
            state.localDisconnects.append((Path(path), data, false))
        case .onDisconnectMerge(let path, let data):
            state.localDisconnects.append((Path(path), data, true))
        case .onDisconnectCancel(let path):
            let location = Path(path)
            state.localDisconnects.removeAll { location.contains($0.path) }
        default:
            break
        }
    }
}
