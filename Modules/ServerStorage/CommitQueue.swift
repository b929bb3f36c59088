import Dispatch
public import Logging
public import Persistence
import Synchronization
public import Tree

/// Batches submitted writes into as few transactions as possible, in submission order
/// (group commit): with ``Durability/full`` the store pays one fsync per batch, not per write.
///
/// Submitters hand writes over with ``submit(_:onDurable:)``, which returns at once; one committer,
/// ``run()``, takes everything pending (up to `maxBatch` writes, never splitting a submission),
/// commits it in one transaction and then calls each submission's `onDurable`, in submission order.
/// While a batch commits, the next one gathers, so the batch grows with the load.
///
/// ```swift
/// let queue = CommitQueue(store: store, logger: logger)
/// let committer = Task { await queue.run() }
/// queue.submit([StoredWrite(path: "users/ada/age", node: Node(.number(37)))]) { result in
///     // Durable now (or `result` holds the error): acknowledge the client.
/// }
/// queue.finish()            // at shutdown: commit what is pending, then let `run()` return
/// await committer.value
/// ```
///
/// Commits run on a dedicated dispatch queue, not on the task running ``run()``, so SQLite and its
/// fsync never block a thread of Swift's cooperative pool. The callbacks run on a second serial
/// queue, in submission order, while the next batch commits: a write fanned out to thousands of
/// listeners does not hold back the commit of the writes after it. Keep them short and
/// non-blocking (resume a continuation, enqueue a message).
///
/// The disk always holds a prefix of what was submitted, since later submissions are usually
/// computed from earlier ones (an increment, a write below a new location). If a batch of several
/// submissions fails, its submissions are retried one by one up to the first that fails; that one
/// gets its error, and it and everything after it (the rest of the batch and every later
/// submission) fail with ``StoreError/haltedAfterFailure(reason:)`` until ``resume()`` is called,
/// which the submitter does once it brought its own state back to what is durable.
///
/// Throughput, measured on the project's 2-core Linux VM (while other builds ran) with
/// ``SQLiteServerStore`` and ``Durability/full``, writes of one leaf four levels deep from four
/// submitting tasks: 100,000 to 155,000 acknowledged writes/s when submitters do not wait (batches
/// fill up while the previous one syncs); 37,000 to 58,000 writes/s with 512 writers that each wait
/// for their previous write to be durable, since then throughput is bounded by writers / (commit +
/// fsync time); about 48,000 writes/s of three-leaf objects.
public final class CommitQueue: Sendable {
    /// Called once a submission is durable, or with the error that kept it from being stored.
    public typealias Completion = @Sendable (Result<Void, StoreError>) -> Void

    private struct Answer: Sendable {
        var completion: Completion
        var result: Result<Void, StoreError>
    }

    private struct Submission: Sendable {
        var writes: [StoredWrite]
        /// Changes to stored onDisconnect operations, committed with `writes`.
        var disconnects: [DisconnectChange] = []
        /// Changes to the stored write ids, committed with `writes`.
        var writeIDs: [WriteIDChange] = []
        /// A settings document to store instead of writes (always a batch of its own).
        var setting: (name: String, value: JSONValue?)?
        var onDurable: Completion
    }

    private struct State: Sendable {
        var pending: [Submission] = []
        /// Writes submitted and not yet committed (waiting, or in the batch being committed).
        var uncommittedWrites = 0
        var finished = false
        var running = false
        /// The committer, when it waits for work.
        var waiter: CheckedContinuation<Void, Never>?
        /// Set by a failed commit until ``resume()``: what every later submission fails with.
        var halted: StoreError?
        /// The write ids of batches that stored nothing else, committed with the next batch that does.
        var carriedWriteIDs: [WriteIDChange] = []
    }

    private let store: any ServerStore
    private let maxBatch: Int
    private let logger: Logger
    private let onCommit: (@Sendable (_ writes: Int) -> Void)?
    private let state = Mutex(State())
    private let committer = DispatchQueue(label: "canopy.commit-queue", qos: .userInitiated)
    private let answerer = DispatchQueue(label: "canopy.commit-queue.answers", qos: .userInitiated)

    /// A queue committing into `store` at most `maxBatch` writes per transaction (a single larger
    /// submission still commits whole). `onCommit`, if given, learns the size of every batch that
    /// committed (on the committer's thread), for metrics.
    public init(
        store: any ServerStore, maxBatch: Int = 8192, logger: Logger,
        onCommit: (@Sendable (_ writes: Int) -> Void)? = nil
    ) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.logger = logger
        self.onCommit = onCommit
    }

    /// Appends `writes` (committed together, all or none) to the next batch and returns at once.
    ///
    /// `onDurable` runs on the queue's answering thread after the batch holding the writes
    /// committed, in submission order, or with the error if it failed. After ``finish()`` it runs at once, on the
    /// caller's thread, with ``StoreError/queueFinished``.
    ///
    /// `disconnects` and `writeIDs` commit in the same transaction as `writes` (see
    /// ``ServerStore/commit(_:disconnects:writeIDs:)``). The write ids of a batch that stores no
    /// writes and no onDisconnect operations (only refusals were answered) are not worth a
    /// transaction of their own: they are committed with the next batch that stores something,
    /// so that they are durable before any later write of their clients is.
    public func submit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange] = [], writeIDs: [WriteIDChange] = [],
        onDurable: @escaping Completion
    ) {
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.finished else { return (false, nil) }
            state.pending.append(
                Submission(
                    writes: writes, disconnects: disconnects, writeIDs: writeIDs, setting: nil, onDurable: onDurable))
            state.uncommittedWrites += writes.count
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        guard accepted else {
            onDurable(.failure(.queueFinished))
            return
        }
        waiter?.resume()
    }

    /// Stores settings document `name` (`nil` removes it) in submission order, after the writes
    /// submitted before it and before those submitted after; `onDone` runs as ``submit(_:onDurable:)``'s
    /// does. A setting that fails does not halt the queue: writes do not depend on it.
    public func submitSetting(_ name: String, _ value: JSONValue?, onDone: @escaping Completion) {
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.finished else { return (false, nil) }
            state.pending.append(Submission(writes: [], setting: (name, value), onDurable: onDone))
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        guard accepted else {
            onDone(.failure(.queueFinished))
            return
        }
        waiter?.resume()
    }

    /// The committer loop: runs until ``finish()`` is called (or the task is cancelled, which acts as
    /// ``finish()``) and everything submitted before it is committed. Call it once.
    public func run() async {
        let first = state.withLock { state in
            defer { state.running = true }
            return !state.running
        }
        precondition(first, "CommitQueue.run() called twice")
        await withTaskCancellationHandler {
            while let batch = await nextBatch() {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    committer.async {
                        let answers = self.commit(batch)
                        let written = batch.reduce(0) { $0 + $1.writes.count }
                        self.answerer.async {
                            for answer in answers { answer.completion(answer.result) }
                            self.state.withLock { $0.uncommittedWrites -= written }
                        }
                        done.resume()
                    }
                }
            }
            await withCheckedContinuation { (answered: CheckedContinuation<Void, Never>) in
                answerer.async { answered.resume() }
            }
        } onCancel: {
            finish()
        }
    }

    /// Stops accepting submissions; ``run()`` returns once the pending ones are committed.
    public func finish() {
        let waiter = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Lets submissions commit again after a failure halted the queue (see the type's discussion).
    /// Submissions made before this call that are still pending fail; call it once the state the
    /// next submissions are computed from matches what is durable.
    public func resume() {
        state.withLock { $0.halted = nil }
    }

    /// Writes submitted and not yet answered: waiting, committing, or committed with their
    /// callbacks still to run (failed ones count until they are reported). A
    /// submitter compares it with a bound of its own to refuse work while the store falls behind,
    /// so that a stalled disk does not grow memory without bound.
    public var uncommittedWrites: Int { state.withLock { $0.uncommittedWrites } }

    /// Whether a failure halted the queue and ``resume()`` was not called since.
    public var isHalted: Bool { state.withLock { $0.halted != nil } }

    /// The next batch, waiting for one if none is pending; `nil` once finished and drained.
    private func nextBatch() async -> [Submission]? {
        while true {
            let taken = state.withLock { state -> [Submission]? in take(from: &state) }
            if let taken { return taken.isEmpty ? nil : taken }
            await withCheckedContinuation { (wake: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.pending.isEmpty && !state.finished {
                        state.waiter = wake
                        return false
                    }
                    return true
                }
                if ready { wake.resume() }
            }
        }
    }

    /// Takes up to `maxBatch` writes of whole submissions: an empty array when finished and drained,
    /// `nil` when there is nothing to take yet.
    private func take(from state: inout State) -> [Submission]? {
        if state.pending.isEmpty { return state.finished ? [] : nil }
        var count = 0
        var end = state.pending.startIndex
        for submission in state.pending {
            if submission.setting != nil {
                if end == state.pending.startIndex { end += 1 }
                break
            }
            if end > state.pending.startIndex, count + submission.writes.count > maxBatch { break }
            count += submission.writes.count
            end += 1
        }
        if end == state.pending.endIndex {
            defer { state.pending = [] }
            return state.pending
        }
        let batch = Array(state.pending[..<end])
        state.pending.removeSubrange(..<end)
        return batch
    }

    /// Commits `batch` in one transaction; returns what to tell each submitter, in order. Blocks.
    private func commit(_ batch: [Submission]) -> [Answer] {
        if let halted = state.withLock({ $0.halted }) {
            return batch.map { Answer(completion: $0.onDurable, result: .failure(halted)) }
        }
        if batch.count == 1, let setting = batch[0].setting {
            do throws(StoreError) {
                try store.setSetting(setting.name, setting.value)
            } catch {
                logger.error("Storing a setting failed", metadata: ["setting": "\(setting.name)", "error": "\(error)"])
                return [Answer(completion: batch[0].onDurable, result: .failure(error))]
            }
            return [Answer(completion: batch[0].onDurable, result: .success(()))]
        }
        var writes: [StoredWrite] = []
        var disconnects: [DisconnectChange] = []
        var writeIDs = state.withLock { state in
            defer { state.carriedWriteIDs = [] }
            return state.carriedWriteIDs
        }
        if batch.count == 1 {
            // A submission alone (an import's update of thousands of children) is committed as it
            // was handed over, without a copy of each write.
            writes = batch[0].writes
            disconnects = batch[0].disconnects
            writeIDs.append(contentsOf: batch[0].writeIDs)
        } else {
            writes.reserveCapacity(batch.reduce(0) { $0 + $1.writes.count })
            for submission in batch {
                writes.append(contentsOf: submission.writes)
                disconnects.append(contentsOf: submission.disconnects)
                writeIDs.append(contentsOf: submission.writeIDs)
            }
        }
        writeIDs = WriteIDChange.latest(writeIDs)
        if writes.isEmpty, disconnects.isEmpty, !writeIDs.isEmpty {
            state.withLock { $0.carriedWriteIDs = writeIDs }
            writeIDs = []
        }
        do throws(StoreError) {
            try commit(writes, disconnects: disconnects, writeIDs: writeIDs)
        } catch {
            logger.error(
                "Commit failed",
                metadata: ["submissions": "\(batch.count)", "writes": "\(writes.count)", "error": "\(error)"])
            if batch.count == 1 {
                halt(after: error)
                return [Answer(completion: batch[0].onDurable, result: .failure(error))]
            }
            return retryOneByOne(batch)
        }
        onCommit?(writes.count)
        return batch.map { Answer(completion: $0.onDurable, result: .success(())) }
    }

    /// Commits the submissions of a failed batch one by one up to the first that fails, which gets
    /// its error; the ones after it fail without being tried, since they were computed after it.
    private func retryOneByOne(_ batch: [Submission]) -> [Answer] {
        var halted: StoreError?
        var answers: [Answer] = []
        answers.reserveCapacity(batch.count)
        for submission in batch {
            if let halted {
                answers.append(Answer(completion: submission.onDurable, result: .failure(halted)))
                continue
            }
            do throws(StoreError) {
                try commit(
                    submission.writes, disconnects: submission.disconnects,
                    writeIDs: WriteIDChange.latest(submission.writeIDs))
            } catch {
                halted = halt(after: error)
                answers.append(Answer(completion: submission.onDurable, result: .failure(error)))
                continue
            }
            answers.append(Answer(completion: submission.onDurable, result: .success(())))
        }
        logger.notice(
            "Retried the submissions of a failed batch one by one",
            metadata: [
                "submissions": "\(batch.count)",
                "committed": "\(answers.count { if case .success = $0.result { true } else { false } })",
            ])
        return answers
    }

    /// One transaction through the store's narrowest call for what it holds. Write ids that fail
    /// with their batch are dropped, not carried: they hold the batch's writes as applied.
    private func commit(
        _ writes: [StoredWrite], disconnects: [DisconnectChange], writeIDs: [WriteIDChange]
    ) throws(StoreError) {
        if !writeIDs.isEmpty {
            try store.commit(writes, disconnects: disconnects, writeIDs: writeIDs)
        } else if !disconnects.isEmpty {
            try store.commit(writes, disconnects: disconnects)
        } else {
            try store.commit(writes)
        }
    }

    /// Halts the queue after `error`; returns what later submissions fail with.
    @discardableResult
    private func halt(after error: StoreError) -> StoreError {
        let halted = StoreError.haltedAfterFailure(reason: "\(error)")
        state.withLock { $0.halted = halted }
        return halted
    }
}
