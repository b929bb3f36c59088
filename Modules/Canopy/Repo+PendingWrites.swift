import Foundation
import Synchronization

/// A `waitForPendingWrites()` call: the writes and transactions pending when it was made.
struct WriteWaiter: Sendable {
    let writes: Set<Int>
    let transactions: Set<Int>
    let continuation: CheckedContinuation<Void, any Error>
}

extension Repo {
    /// Returns once every write and transaction pending now is answered, refused or canceled;
    /// throws `CancellationError` when the waiting task is cancelled (the writes go on).
    func waitForPendingWrites() async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let known = state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    let waiter = WriteWaiter(
                        writes: Set(state.writes.keys), transactions: Set(state.transactions.keys),
                        continuation: continuation)
                    if waiter.writes.isEmpty, waiter.transactions.isEmpty { return .success(()) }
                    state.writeWaiters[id] = waiter
                    return nil
                }
                if let known { continuation.resume(with: known) }
            }
        } onCancel: {
            state.withLock { $0.writeWaiters.removeValue(forKey: id) }?.continuation.resume(
                throwing: CancellationError())
        }
    }

    /// Ends the `waitForPendingWrites()` calls whose writes are all gone. Call under the lock once a
    /// write or transaction ended and its ``WriteStatus`` and completion were told.
    func settleWriteWaiters(in state: inout State) {
        guard !state.writeWaiters.isEmpty else { return }
        for (id, waiter) in state.writeWaiters {
            guard waiter.writes.allSatisfy({ state.writes[$0] == nil }),
                waiter.transactions.allSatisfy({ state.transactions[$0] == nil })
            else { continue }
            state.writeWaiters[id] = nil
            waiter.continuation.resume()
        }
    }
}
