import Logging
import Persistence
import Query
import Synchronization
import Testing
import Tree

@testable import CanopyServer

/// A store that refuses every commit touching `broken`, as a full or failing disk would.
final class FailingStore: ServerStore {
    private let inner = InMemoryServerStore()

    struct DiskFull: Error {}

    func loadTree() throws -> Node { inner.loadTree() }

    func commit(_ writes: [StoredWrite]) throws {
        if writes.contains(where: { $0.path.front == "broken" }) { throw DiskFull() }
        try inner.commit(writes)
    }

    func setting(_ name: String) throws -> JSONValue? { inner.setting(name) }
    func setSetting(_ name: String, _ value: JSONValue?) throws { inner.setSetting(name, value) }
}

/// Records what a listener is sent.
final class RecordingSubscriber: Subscriber {
    let subscriberID = 1
    let pushes = Mutex<[JSONValue]>([])
    func deliver(_ push: Push) { pushes.withLock { $0.append(push.data) } }
}

struct StorageFailureTests {
    static func set(_ database: Database, _ path: Path, _ json: JSONValue) async -> WriteOutcome {
        await withCheckedContinuation { continuation in
            Task { await database.set(path, json: json) { continuation.resume(returning: $0) } }
        }
    }

    @Test func aWriteTheStoreRefusesIsRolledBackInMemoryAndForListeners() async throws {
        let store = FailingStore()
        let logger = Logger(label: "test")
        let queue = CommitQueue(store: store, logger: logger)
        let committer = Task { await queue.run() }
        defer {
            queue.finish()
            committer.cancel()
        }
        let database = try Database(
            name: "test", store: store, commits: queue, metrics: ServerMetrics(), logger: logger)
        let listener = RecordingSubscriber()
        _ = await database.listen(listener, path: "broken", params: .default, queryID: "default", tag: nil, hash: nil)

        guard case .ok = await Self.set(database, "kept", 1) else { Issue.record("a good write failed"); return }
        guard case .rejected(let error) = await Self.set(database, "broken/x", 2) else {
            Issue.record("the store's failure was not reported")
            return
        }
        #expect(error.status == "storage_error")

        // Memory goes back to what is durable; the good write stays.
        var reverted = false
        for _ in 0..<100 where !reverted {
            reverted = await database.read("broken", params: .default).isEmpty
            if !reverted { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reverted, "the refused write is still visible in memory")
        #expect(await database.read("kept", params: .default) == Node(.number(1)))
        // Pushes go out only once durable, so the listener never saw 2; after the reload it is told
        // the location's value again.
        #expect(listener.pushes.withLock { $0 } == [.null])

        // Writes are accepted again once memory is back.
        guard case .ok = await Self.set(database, "kept", 3) else { Issue.record("writes stayed refused"); return }
    }
}
