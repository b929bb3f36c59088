import CanopyTesting
import Logging
import Query
import ServerStorage
import Testing
import Tree

@testable import CanopyServer

/// Each namespace keeps query indexes by its own server's settings, so two servers in one process
/// (tests, an app embedding two) do not change each other's.
struct IndexRetentionTests {
    @Test func twoDatabasesInOneProcessKeepTheirOwnIndexLimits() async throws {
        let names = (0..<4).map { "f\($0)" }
        var children: [String: JSONValue] = [:]
        // Values too long for the children to be packed: a packed node sorts its few members anew
        // for each query and keeps no index.
        for key in ["a", "b", "c"] {
            let value = JSONValue.string(String(repeating: key, count: 300))
            children[key] = .object(Dictionary(uniqueKeysWithValues: names.map { ($0, value) }))
        }
        let logger = Logger(label: "test")
        var built: [Int: Int] = [:]
        for limit in [1, 3] {
            let store = InMemoryServerStore()
            let queue = CommitQueue(store: store, logger: logger)
            let committer = Task { await queue.run() }
            defer {
                queue.finish()
                committer.cancel()
            }
            let database = try Database(
                name: "limit\(limit)", store: store, commits: queue, metrics: ServerMetrics(), logger: logger,
                indexRetention: IndexRetention(maxPerNode: limit))
            guard case .ok = await database.set("items", json: .object(children), as: .admin) else {
                Issue.record("the data was not stored")
                return
            }
            for name in names {
                let params = try QueryParams().ordered(by: .child(Path(name))).limited(toFirst: 1)
                #expect(await database.read("items", params: params, caller: .admin)?.childCount == 1)
            }
            let items = await database.root.child("items")
            built[limit] = names.filter { items.hasBuiltIndex(.child(Path($0))) }.count
        }
        #expect(built == [1: 1, 3: 3])
    }
}
