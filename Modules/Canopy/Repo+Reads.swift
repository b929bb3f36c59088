import Dispatch
import Query
import SyncEngine
import Synchronization
import Transport
import Tree

extension Repo {
    /// How long `getData` waits for the first connection attempt of a run to end.
    static let getConnectTimeout: Duration = .seconds(3)

    /// `getData(source:)`. `.default` and `.server` ask the server when connected, after waiting
    /// (up to 3 s) for a connection attempt under way to end; when offline `.default` answers from
    /// what the device holds completely at once, `.server` throws. `.cache` never asks the server.
    func get(_ query: DatabaseQuery, source: DataSource) async throws(DatabaseError) -> DataSnapshot {
        let spec = query.spec
        let location = "/" + spec.path.wireString
        if spec.path.front == .info {
            let info = state.withLock { infoNode($0) }
            return DataSnapshot(ref: query.ref, node: info.child(at: spec.path.popFront()), index: spec.params.index)
        }
        if source == .cache {
            guard let cached = await cachedSnapshot(query) else { throw .notCached(location) }
            return cached
        }
        start()
        if state.withLock({ reachability($0) }) == .connecting {
            await waitUntilReachabilityKnown(timeout: Self.getConnectTimeout)
        }
        let outcome: RequestOutcome = await withCheckedContinuation { continuation in
            let sent = state.withLock { state in
                send(.get(path: spec.path.wireString, query: spec.params.wireObject), in: &state) { outcome in
                    continuation.resume(returning: outcome)
                }
            }
            if !sent { continuation.resume(returning: .disconnected) }
        }
        if case .answered(let status, let data) = outcome {
            if let error = RequestOutcome.error(for: status, data: data) { throw error }
            if let node = try? Node(json: data) {
                return DataSnapshot(ref: query.ref, node: node, index: spec.params.index)
            }
        }
        // Offline, or the connection was lost before the answer.
        if source == .default, let cached = await cachedSnapshot(query) { return cached }
        throw .offline(location)
    }

    /// The query's data as the device holds it (in memory, else on disk from an earlier run), with
    /// the pending writes applied, when it holds all of it.
    func cachedSnapshot(_ query: DatabaseQuery) async -> DataSnapshot? {
        // What is still queued for the disk is part of what the device holds. Waiting for it blocks
        // a thread, so a dispatch thread rather than one of the tasks' cooperative threads.
        if let persistence {
            await withCheckedContinuation { (flushed: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    persistence.flush()
                    flushed.resume()
                }
            }
        }
        let spec = query.spec
        return state.withLock { state in
            guard let node = state.tree.cachedValue(for: spec, includingPersisted: true) else { return nil }
            return DataSnapshot(
                ref: query.ref, node: node, index: spec.params.index, isFromCache: !isSynced(spec, in: state),
                pendingWrites: state.tree.pendingWrites.visibleWrites.childWrite(at: spec.path))
        }
    }
}
