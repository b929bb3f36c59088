import CanopyTesting
import Dispatch
import Logging
import Persistence
import ServerStorage
import Synchronization
import Testing
import Tree

struct CommitQueueTests {
    /// Quiet: the failure tests log errors on purpose.
    private let logger = Logger(label: "canopy.tests.commit-queue", factory: { _ in SwiftLogNoOpLogHandler() })

    /// What the callbacks saw, in the order they ran.
    private final class Record: Sendable {
        let order = Mutex<[Int]>([])
        let failures = Mutex<[Int]>([])
        let notDurable = Mutex<[Int]>([])
        /// Held around `submit`, so that its numbering is the queue's submission order.
        let sequence = Mutex(0)
    }

    @Test func concurrentWritesAreCommittedInOrderAndDurable() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            // A second connection: what it reads was committed, not merely handed to the store.
            let reader = try SQLiteServerStore(path: file)
            let queue = CommitQueue(store: store, maxBatch: 256, logger: logger)
            let committer = Task { await queue.run() }
            let record = Record()
            let tasks = 8
            let perTask = 1250
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perTask {
                            let path = Path(keys: [ChildKey("t\(task)"), ChildKey("w\(index)")])
                            let write = StoredWrite(path: path, node: Node(.number(Double(index))))
                            record.sequence.withLock { next in
                                let number = next
                                next += 1
                                queue.submit([write]) { result in
                                    if case .failure = result { record.failures.withLock { $0.append(number) } }
                                    record.order.withLock { $0.append(number) }
                                    // Spot-check durability from the other connection.
                                    if number % 997 == 0,
                                        (try? reader.loadTree().child(at: path)) != Node(.number(Double(index)))
                                    {
                                        record.notDurable.withLock { $0.append(number) }
                                    }
                                }
                            }
                            if index % 100 == 0 { await Task.yield() }
                        }
                    }
                }
            }
            queue.finish()
            await committer.value
            let total = tasks * perTask
            #expect(record.order.withLock { $0 } == Array(0..<total))
            #expect(record.failures.withLock { $0 }.isEmpty)
            #expect(record.notDurable.withLock { $0 }.isEmpty)

            var expected = Node.empty
            for task in 0..<tasks {
                for index in 0..<perTask {
                    expected = expected.updating(
                        at: Path(keys: [ChildKey("t\(task)"), ChildKey("w\(index)")]), to: Node(.number(Double(index))))
                }
            }
            try store.close()
            #expect(try SQLiteServerStore(path: file).loadTree() == expected)
        }
    }

    /// Later submissions are computed from earlier ones, so after a failure the disk keeps a prefix
    /// of what was submitted: the failing submission and everything after it fail until `resume()`.
    @Test func aFailureHaltsTheQueueSoTheDiskHoldsAPrefix() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            let queue = CommitQueue(store: store, logger: logger)
            let results = Mutex<[String]>([])
            let bad = StoredWrite(path: "bad", node: Node(children: [(ChildKey("x/y"), Node(.bool(true)))]))
            let submissions: [(String, [StoredWrite])] = [
                ("first", [try StoredWrite("a", 1)]),
                ("bad", [try StoredWrite("b", 1), bad]),
                ("empty", []),
                ("last", [try StoredWrite("c", 1), try StoredWrite("a", 2)]),
            ]
            func submit(_ name: String, _ writes: [StoredWrite]) {
                queue.submit(writes) { result in
                    let outcome: String
                    switch result {
                    case .success: outcome = "ok"
                    case .failure(StoreError.haltedAfterFailure): outcome = "halted"
                    case .failure: outcome = "failed"
                    }
                    results.withLock { $0.append("\(name) \(outcome)") }
                }
            }
            // Submitted before the committer starts, so they form one batch.
            for (name, writes) in submissions { submit(name, writes) }
            let committer = Task { await queue.run() }
            try #require(
                await eventually(interval: .milliseconds(5)) { results.withLock { $0.count } >= submissions.count })
            #expect(results.withLock { $0 } == ["first ok", "bad failed", "empty halted", "last halted"])
            #expect(queue.isHalted)
            #expect(try store.loadTree() == (try Node(json: ["a": 1])))

            // Still halted for a submission made later, until the submitter resumes the queue.
            submit("later", [try StoredWrite("d", 1)])
            try #require(await eventually(interval: .milliseconds(5)) { results.withLock { $0.count } >= 5 })
            queue.resume()
            submit("resumed", [try StoredWrite("e", 1)])
            queue.finish()
            await committer.value
            #expect(results.withLock { Array($0.suffix(2)) } == ["later halted", "resumed ok"])
            #expect(try store.loadTree() == (try Node(json: ["a": 1, "e": 1])))
        }
    }

    @Test func storeFailureReachesEveryCallback() async throws {
        try await withStoreFile { file in
            let store = try SQLiteServerStore(path: file)
            try store.close()
            let queue = CommitQueue(store: store, logger: logger)
            let failures = Mutex(0)
            for index in 0..<5 {
                queue.submit([StoredWrite(path: Path(keys: [ChildKey("k\(index)")]), node: Node(.bool(true)))]) {
                    if case .failure = $0 { failures.withLock { $0 += 1 } }
                }
            }
            queue.finish()
            await queue.run()
            #expect(failures.withLock { $0 } == 5)
        }
    }

    @Test func largeSubmissionsAreNotSplitAndBatchesRespectTheLimit() async throws {
        let store = InMemoryServerStore()
        let queue = CommitQueue(store: store, maxBatch: 4, logger: logger)
        let done = Mutex(0)
        let big = (0..<10).map {
            StoredWrite(path: Path(keys: [ChildKey("big"), ChildKey("\($0)")]), node: Node(.number(1)))
        }
        queue.submit(big) { _ in done.withLock { $0 += 1 } }
        for index in 0..<9 {
            queue.submit([StoredWrite(path: Path(keys: [ChildKey("s\(index)")]), node: Node(.number(2)))]) { _ in
                done.withLock { $0 += 1 }
            }
        }
        queue.finish()
        await queue.run()
        #expect(done.withLock { $0 } == 10)
        #expect(store.loadTree().child(at: "big").childCount == 10)
        #expect(store.loadTree().childCount == 10)
    }

    @Test func submitAfterFinishFailsAtOnce() async {
        let queue = CommitQueue(store: InMemoryServerStore(), logger: logger)
        let committer = Task { await queue.run() }
        queue.finish()
        await committer.value
        let result = Mutex<StoreError?>(nil)
        queue.submit([]) { outcome in
            if case .failure(let error) = outcome { result.withLock { $0 = error } }
        }
        #expect(result.withLock { $0 } == .queueFinished)
    }

    @Test func cancellingTheCommitterDrainsAndStops() async {
        let store = InMemoryServerStore()
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        let committed = Mutex(false)
        queue.submit([StoredWrite(path: "a", node: Node(.bool(true)))]) { result in
            committed.withLock { $0 = (try? result.get()) != nil }
        }
        committer.cancel()
        await committer.value
        #expect(committed.withLock { $0 })
        #expect(store.loadTree() == Node(children: [(ChildKey("a"), Node(.bool(true)))]))
    }

    /// Records the order of the store's calls; refuses settings named `refused`.
    private final class OrderedStore: ServerStore {
        let inner = InMemoryServerStore()
        let calls = Mutex<[String]>([])

        func loadTree() -> Node { inner.loadTree() }
        func commit(_ writes: [StoredWrite]) throws(StoreError) {
            calls.withLock { $0.append("commit " + writes.map(\.path.description).joined(separator: ",")) }
            try inner.commit(writes)
        }
        func setting(_ name: String) -> JSONValue? { inner.setting(name) }
        func setSetting(_ name: String, _ value: JSONValue?) throws(StoreError) {
            calls.withLock { $0.append("setting \(name)") }
            if name == "refused" {
                throw .sqlite(file: "ordered", operation: "writing setting \"\(name)\"", message: "refused")
            }
            inner.setSetting(name, value)
        }
    }

    @Test func settingsAreStoredInOrderWithWritesAndAFailedOneDoesNotHalt() async throws {
        let store = OrderedStore()
        let queue = CommitQueue(store: store, logger: logger)
        let outcomes = Mutex<[String]>([])
        func record(_ name: String) -> CommitQueue.Completion {
            { result in outcomes.withLock { $0.append(name + ((try? result.get()) != nil ? " ok" : " failed")) } }
        }
        // Submitted before the committer runs, so that they could all share one batch.
        queue.submit([StoredWrite(path: "a", node: Node(.number(1)))], onDurable: record("a"))
        queue.submitSetting("rules", .string("{}"), onDone: record("rules"))
        queue.submit([StoredWrite(path: "b", node: Node(.number(2)))], onDurable: record("b"))
        queue.submitSetting("refused", .null, onDone: record("refused"))
        queue.submit([StoredWrite(path: "c", node: Node(.number(3)))], onDurable: record("c"))
        let committer = Task { await queue.run() }
        queue.finish()
        await committer.value
        #expect(
            store.calls.withLock { $0 } == ["commit /a", "setting rules", "commit /b", "setting refused", "commit /c"])
        #expect(outcomes.withLock { $0 } == ["a ok", "rules ok", "b ok", "refused failed", "c ok"])
        #expect(store.inner.setting("rules") == .string("{}"))
        #expect(!queue.isHalted)
    }

    /// A write's callback fans it out to every listener; the writes after it must not wait for that.
    @Test func aSlowAnswerDoesNotHoldBackTheNextCommitAndAnswersStayInOrder() async throws {
        let store = OrderedStore()
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        let release = DispatchSemaphore(value: 0)
        let outcomes = Mutex<[String]>([])
        queue.submit([StoredWrite(path: "a", node: Node(.number(1)))]) { _ in
            release.wait()
            outcomes.withLock { $0.append("a") }
        }
        // Generous: when every suite runs at once, the committer's task may wait long for a thread.
        try #require(
            await eventually(timeout: .seconds(60), interval: .milliseconds(5)) { !store.calls.withLock { $0 }.isEmpty }
        )
        queue.submit([StoredWrite(path: "b", node: Node(.number(2)))]) { _ in outcomes.withLock { $0.append("b") } }
        try #require(
            await eventually(timeout: .seconds(60), interval: .milliseconds(5)) {
                store.calls.withLock { $0 }.count >= 2
            })
        #expect(store.calls.withLock { $0 } == ["commit /a", "commit /b"])
        // Committed but unanswered writes still count against a submitter's bound.
        #expect(queue.uncommittedWrites == 2)
        #expect(outcomes.withLock { $0 }.isEmpty)
        release.signal()
        queue.finish()
        await committer.value
        #expect(outcomes.withLock { $0 } == ["a", "b"])
        #expect(queue.uncommittedWrites == 0)
    }
}
