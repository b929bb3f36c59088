import Benchmark
import Canopy
import ClientCache
import Dispatch
import Foundation
import Synchronization
import Tree

// What an offline-first client pays for a large cache: evicting old queries, and starting up to the
// first event served from the cache. Each is measured with 10 MB and with 100 MB of kept data in the
// same run, on the same layout, so the ratio between the two holds even on a noisy machine: neither
// should grow with the size of the cache. And whether the cache bound holds on disk: the bytes the
// SDK counts beside the bytes its files take, after listening to many items in turn.

let benchmarks: @Sendable () -> Void = {
    // An eviction writes and deletes a few MB in SQLite: milliseconds per measured iteration, with
    // the evicted data written again (unmeasured) before each one.
    let eviction = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 2,
        maxDuration: .seconds(10),
        maxIterations: 100
    )
    // A cold start copies the whole store file (unmeasured) before each iteration, and every
    // iteration leaves a `Database` behind with its file open (deleted, so its space comes back when
    // the benchmark's process ends): a bounded number of iterations, enough for a median on a noisy
    // machine.
    let coldStart = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 2,
        maxDuration: .seconds(30),
        maxIterations: 40
    )

    // One run each (a server in this process, 20 MB of items listened to one after the other): the
    // figures are the bytes, which do not vary from run to run.
    let bound = Benchmark.Configuration(
        metrics: [.wallClock] + ListenInTurn.metrics,
        warmupIterations: 0,
        maxDuration: .seconds(600),
        maxIterations: 1
    )
    for (count, kilobytes) in [(2_000, 10), (200, 100)] {
        let folder = CacheLayout.temporaryFolder("listen-\(count)x\(kilobytes)kb")
        Benchmark("listen in turn to \(count) items of \(kilobytes) KB, bound 1 MiB", configuration: bound) {
            benchmark in
            let outcome = try await ListenInTurn(count: count, kilobytes: kilobytes).run(folder: folder)
            outcome.report(to: benchmark)
            try? FileManager.default.removeItem(at: folder)
        }
    }

    for megabytes in [10, 100] {
        // Each iteration writes the same 20 inactive queries of about 100 KB (2 MB) back into the
        // store, then measures the plan that picks them (among every tracked query, as the SDK
        // does) and their eviction. The kept data stays.
        let evictionFolder = CacheLayout.temporaryFolder("eviction-\(megabytes)mb")
        Benchmark("evict 2 MB, \(megabytes) MB kept", configuration: eviction) {
            (benchmark: Benchmark, fixture: EvictionFixture) in
            let queries = try fixture.writeOldQueries()
            benchmark.startMeasurement()
            let plan = fixture.policy.plan(evictingFrom: queries)
            try fixture.store.evict(plan)
            benchmark.stopMeasurement()
            try fixture.check(plan)
        } setup: {
            try EvictionFixture(folder: evictionFolder, keptQueries: megabytes * CacheLayout.queriesPerMegabyte)
        } teardown: {
            try? FileManager.default.removeItem(at: evictionFolder)
        }

        // An app's later run without a network: from making the `Database` to the first `.value`
        // event of a location its cache holds completely. Each iteration opens a fresh copy of the
        // same store file under a namespace of its own.
        let coldStartFolder = CacheLayout.temporaryFolder("cold-start-\(megabytes)mb")
        Benchmark("cold start to first cached event, \(megabytes) MB cached", configuration: coldStart) {
            (benchmark: Benchmark, fixture: ColdStartFixture) in
            let (namespace, files) = try fixture.prepareRun()
            let event = FirstEvent()
            benchmark.startMeasurement()
            let database = Database.database(url: "http://127.0.0.1:1?ns=\(namespace)")
            try database.configurePersistence(
                enabled: true, cacheSizeBytes: ColdStartFixture.cacheSizeBytes, directory: fixture.runFolder)
            database.reference(withPath: ColdStartFixture.observedPath).observe(.value) { event.record($0) }
            let arrived = event.wait(seconds: 10)
            benchmark.stopMeasurement()
            // No public shutdown: the database stays (offline, so it stops retrying), its files go.
            database.goOffline()
            for file in files { try? FileManager.default.removeItem(at: file) }
            guard arrived else { throw BenchmarkFailure("no .value event from the cache within 10 s (\(namespace))") }
            guard event.value == fixture.expectedValue else {
                let held = String(describing: event.value).prefix(60)
                throw BenchmarkFailure("the cached event held \(held)…, not the item cached at items/i0")
            }
        } setup: {
            try ColdStartFixture(folder: coldStartFolder, keptQueries: megabytes * CacheLayout.queriesPerMegabyte)
        } teardown: {
            try? FileManager.default.removeItem(at: coldStartFolder)
        }
    }
}

/// A benchmark's setup or check that went wrong, reported as the benchmark's failure.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// The data both suites cache: kept queries at `kept/k<i>` of about 100 KB each (ten children of
/// 10,000-character strings), so 10 MB is 100 of them and 100 MB 1,000.
enum CacheLayout {
    /// Kept queries per megabyte of kept data.
    static let queriesPerMegabyte = 10
    /// Characters of each of a block's ten strings.
    static let stringLength = 10_000

    /// About 100 KB of JSON: ten children of `stringLength` characters, marked with `label`.
    static func block(_ label: String) throws -> Node {
        let filler = String(repeating: "x", count: stringLength - label.count - 2)
        var children: [String: JSONValue] = [:]
        for child in 0..<10 { children["c\(child)"] = .string("\(label)c\(child)" + filler) }
        return try Node(json: .object(children))
    }

    /// The location of kept query `index`.
    static func keptPath(_ index: Int) -> Path { Path("kept/k\(index)") }

    /// Caches `count` complete tracked queries of a block each at `kept/k<i>` (ids `firstID` on),
    /// active or not, and returns them.
    static func writeKeptQueries(
        _ count: Int, firstID: Int, active: Bool, into store: SQLiteClientStore
    ) throws -> [TrackedQuery] {
        try (0..<count).map { index in
            let query = TrackedQuery(
                id: firstID + index, path: keptPath(index), queryIdentifier: "default", params: [:],
                lastUse: 1_700_000_000_000 + Double(index), isComplete: true, isActive: active)
            try store.overwriteServerCache(block("k\(index)"), at: query.path)
            try store.saveTrackedQuery(query)
            return query
        }
    }

    /// A new folder under the system's temporary folder, named after `purpose` (not created yet).
    static func temporaryFolder(_ purpose: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-bench-\(purpose)-\(UUID().uuidString)", isDirectory: true)
    }
}

/// A client store holding `keptQueries` active queries of kept data, into which each iteration
/// writes the 20 inactive queries it then evicts.
final class EvictionFixture: @unchecked Sendable {
    /// The inactive queries each iteration evicts: 20 of about 100 KB, 2 MB.
    static let oldQueries = 20
    /// Ids of the old queries start here, after every kept one.
    static let firstOldID = 1_000_000

    let store: SQLiteClientStore
    /// Every query a listener holds: never evicted, nor their data.
    let kept: [TrackedQuery]
    /// Evicts every inactive query in one round: exactly the old ones.
    let policy = LRUCachePolicy(maxBytes: 1, fractionEvictedPerRound: 1)
    /// The old queries' data, the same every iteration.
    let oldData: [Node]
    /// The store's size with the kept data only.
    let keptSize: ClientStoreSize

    init(folder: URL, keptQueries: Int) throws {
        store = try SQLiteClientStore(path: folder.appendingPathComponent("eviction.sqlite").path)
        kept = try CacheLayout.writeKeptQueries(keptQueries, firstID: 0, active: true, into: store)
        oldData = try (0..<Self.oldQueries).map { try CacheLayout.block("q\($0)") }
        keptSize = store.size
        // One round in setup, so the store is in the state every measured iteration starts from.
        let plan = policy.plan(evictingFrom: try writeOldQueries())
        try store.evict(plan)
        try check(plan)
    }

    /// Caches the old queries' data at `old/q<i>` and tracks them (complete, inactive, used long
    /// ago); returns every tracked query, kept ones first.
    func writeOldQueries() throws -> [TrackedQuery] {
        var queries = kept
        for (index, data) in oldData.enumerated() {
            let query = TrackedQuery(
                id: Self.firstOldID + index, path: Path("old/q\(index)"), queryIdentifier: "default", params: [:],
                lastUse: 1_600_000_000_000 + Double(index), isComplete: true, isActive: false)
            try store.overwriteServerCache(data, at: query.path)
            try store.saveTrackedQuery(query)
            queries.append(query)
        }
        let added = store.size.serverCache - keptSize.serverCache
        guard added >= 2_000_000, added < 2_100_000 else {
            throw BenchmarkFailure("the old queries cached \(added) bytes, not about 2 MB")
        }
        return queries
    }

    /// Checks that `plan` evicted exactly the old queries and left the kept data as it was.
    func check(_ plan: EvictionPlan) throws {
        guard plan.evicted.map(\.id) == (0..<Self.oldQueries).map({ Self.firstOldID + $0 }) else {
            throw BenchmarkFailure("the plan evicted \(plan.evicted.map(\.id)), not the old queries")
        }
        guard store.size == keptSize else {
            throw BenchmarkFailure("after eviction the store holds \(store.size), not the kept \(keptSize)")
        }
    }
}

/// A store file as an earlier run of the app left it, copied under a new namespace for each
/// iteration: a complete query at `items` (100 children of about 1 KB), complete queries of kept
/// data at `kept/k<i>`, and the client's id.
final class ColdStartFixture: @unchecked Sendable {
    /// The location each iteration listens to: a child of the complete `items` query.
    static let observedPath = "items/i0"
    /// The largest cache the SDK allows (100 MB), so no setting asks for an eviction of the data.
    static let cacheSizeBytes: UInt = 100 * 1024 * 1024

    /// The template store's file name, without its `-wal` and `-shm` companions.
    static let templateName = "template.sqlite"

    /// Where the template store file is written.
    let templateFolder: URL
    /// Where each iteration's store file goes (the folder given to the `Database`).
    let runFolder: URL
    /// What the `.value` event at ``observedPath`` must hold.
    let expectedValue: String
    /// The bytes of cached data in the template.
    let cachedBytes: Int
    private var runs = 0
    /// A label of its own, so the two benchmarks' namespaces differ even in one process.
    private let label: String

    init(folder: URL, keptQueries: Int) throws {
        templateFolder = folder.appendingPathComponent("template", isDirectory: true)
        runFolder = folder.appendingPathComponent("runs", isDirectory: true)
        try FileManager.default.createDirectory(at: runFolder, withIntermediateDirectories: true)
        label = "c\(keptQueries)x"
        let filler = String(repeating: "i", count: 1_000)
        var items: [String: JSONValue] = [:]
        for index in 0..<100 { items["i\(index)"] = .string("item \(index) " + filler) }
        expectedValue = "item 0 " + filler
        cachedBytes = try Self.writeTemplate(
            at: templateFolder.appendingPathComponent(Self.templateName).path, items: try Node(json: .object(items)),
            keptQueries: keptQueries)
        let template = templateFolder.appendingPathComponent(Self.templateName)
        // The data is in the file itself, not only in its journal.
        let fileSize = try template.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0
        guard fileSize >= cachedBytes else {
            throw BenchmarkFailure("the template file has \(fileSize) bytes, less than its \(cachedBytes) cached")
        }
    }

    /// Writes the template store and returns its bytes of cached data. The store is released when
    /// this returns, which checkpoints its journal into the file and frees the file for copying.
    private static func writeTemplate(at path: String, items: Node, keptQueries: Int) throws -> Int {
        let store = try SQLiteClientStore(path: path)
        try store.overwriteServerCache(items, at: "items")
        try store.saveTrackedQuery(
            TrackedQuery(
                id: 0, path: "items", queryIdentifier: "default", params: [:], lastUse: 1_700_000_000_000,
                isComplete: true, isActive: false))
        _ = try CacheLayout.writeKeptQueries(keptQueries, firstID: 1, active: false, into: store)
        // An earlier run chose the client's id: a later run reads it, and does not store a new one.
        try store.setSetting("client_id", "benchmark-client")
        return store.size.serverCache
    }

    /// Copies the template (with its `-wal` and `-shm` files, if any) to the store file of a new
    /// namespace, `<host>_<port>_<namespace>.sqlite`; returns the namespace and the files made.
    func prepareRun() throws -> (namespace: String, files: [URL]) {
        runs += 1
        let namespace = "bench\(label)\(runs)"
        let target = runFolder.appendingPathComponent("127.0.0.1_1_\(namespace).sqlite")
        var files: [URL] = []
        for suffix in ["", "-wal", "-shm"] {
            let source = templateFolder.appendingPathComponent(Self.templateName + suffix)
            guard FileManager.default.fileExists(atPath: source.path) else { continue }
            let copy = URL(fileURLWithPath: target.path + suffix)
            try FileManager.default.copyItem(at: source, to: copy)
            // On disk before the measurement, so the kernel does not write the copy back during it.
            let handle = try FileHandle(forWritingTo: copy)
            try handle.synchronize()
            try handle.close()
            files.append(copy)
        }
        files.append(URL(fileURLWithPath: target.path + ".lock"))
        return (namespace, files)
    }
}

/// The first `.value` event a listener gets, and a signal when it comes.
final class FirstEvent: Sendable {
    private let first = Mutex<String??>(nil)
    private let arrived = DispatchSemaphore(value: 0)

    /// Keeps the first snapshot's value (a string, or a description of what else it was).
    func record(_ snapshot: DataSnapshot) {
        let isFirst = first.withLock { first in
            guard first == nil else { return false }
            first = .some(snapshot.value.map { $0 as? String ?? "\($0)" })
            return true
        }
        if isFirst { arrived.signal() }
    }

    /// Waits up to `seconds` for the first event; whether it came.
    func wait(seconds: Double) -> Bool {
        arrived.wait(timeout: .now() + seconds) == .success
    }

    /// The first event's value (`nil` before it, `.some(nil)` for no data).
    var value: String?? { first.withLock { $0 } }
}
