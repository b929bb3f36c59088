import Benchmark
import Canopy
import CanopyServer
import CanopyTesting
import Foundation
import Synchronization

/// An app that listens to many items in turn, each once, with a small cache bound: what the SDK
/// counts it keeps, and what its files take on disk (the SQLite file and its write-ahead log).
///
/// A server in this process holds `items/i<n>` (`count` strings of `kilobytes` KB); one `Database`
/// with persistence on and `persistenceCacheSizeBytes` at ``boundBytes`` listens to each item until
/// its value arrives, then stops listening, item after item.
struct ListenInTurn: Sendable {
    /// The cache bound the app asks for: 1 MiB, the smallest the SDK allows.
    static let boundBytes = 1024 * 1024

    let count: Int
    let kilobytes: Int

    /// What the files hold once every item was listened to and the client stored what it was sent.
    struct Outcome: Sendable {
        /// The SDK's own count: cached data and pending writes.
        var countedBytes: Int
        var fileBytes: Int
        var walBytes: Int

        var onDiskBytes: Int { fileBytes + walBytes }

        /// Records the figures as the run's ``ListenInTurn/metrics``, and prints them.
        func report(to benchmark: Benchmark) {
            for (metric, value) in zip(ListenInTurn.metrics, [countedBytes, onDiskBytes, fileBytes, walBytes]) {
                benchmark.measurement(metric, value)
            }
            print(
                "\(benchmark.name): counted \(countedBytes) bytes, on disk \(onDiskBytes) (file \(fileBytes), WAL \(walBytes))"
            )
        }
    }

    /// The figures each run reports, in bytes.
    static let metrics: [BenchmarkMetric] = [
        .custom("counted bytes", useScalingFactor: false),
        .custom("on-disk bytes (file + WAL)", useScalingFactor: false),
        .custom("file bytes", useScalingFactor: false), .custom("WAL bytes", useScalingFactor: false),
    ]

    /// Starts a server, fills it, listens to every item in turn from a new `Database` whose store
    /// goes in `folder`, and returns what its files hold then.
    func run(folder: URL) async throws -> Outcome {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.dataDirectory = nil
        let server = try await TestServer.start(configuration: configuration)
        do {
            let outcome = try await run(server: server, folder: folder)
            await server.stop()
            return outcome
        } catch {
            await server.stop()
            throw error
        }
    }

    private func run(server: TestServer, folder: URL) async throws -> Outcome {
        let namespace = "listen\(count)x\(kilobytes)"
        let filler = String(repeating: "x", count: kilobytes * 1024 - 8)
        // In batches under the server's 16 MB message limit.
        let batch = max(1, 4 * 1024 / kilobytes)
        for start in stride(from: 0, to: count, by: batch) {
            let children = (start..<min(count, start + batch)).map {
                "\"i\($0)\":\"\(String(format: "%07d", $0))\(filler)\""
            }
            let response = try await server.http(
                .PATCH, "/items.json?ns=\(namespace)", body: "{" + children.joined(separator: ",") + "}")
            guard response.status == 200 else {
                throw BenchmarkFailure(
                    "writing items \(start)… answered \(response.status): \(response.body.prefix(200))")
            }
        }

        let database = Database.database(url: "http://127.0.0.1:\(server.port)?ns=\(namespace)")
        try database.configurePersistence(enabled: true, cacheSizeBytes: UInt(Self.boundBytes), directory: folder)
        for index in 0..<count {
            let (values, continuation) = AsyncStream.makeStream(of: Int.self)
            let item = database.reference(withPath: "items/i\(index)")
            let handle = item.observe(.value) { continuation.yield(($0.value as? String)?.count ?? 0) }
            var iterator = values.makeAsyncIterator()
            let length = await iterator.next()
            item.removeObserver(withHandle: handle)
            continuation.finish()
            guard length == kilobytes * 1024 - 1 else {
                throw BenchmarkFailure("items/i\(index) held \(length ?? 0) characters, not \(kilobytes * 1024 - 1)")
            }
        }
        // Waits until the client stored everything it was sent.
        guard let size = database.persistenceSize else { throw BenchmarkFailure("persistence is off") }
        database.goOffline()
        let file = folder.appendingPathComponent("127.0.0.1_\(server.port)_\(namespace).sqlite").path
        return Outcome(
            countedBytes: size.cachedBytes + size.pendingWriteBytes, fileBytes: Self.bytes(of: file),
            walBytes: Self.bytes(of: file + "-wal"))
    }

    /// The size of the file at `path`, 0 when there is none.
    static func bytes(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}
