import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Takeover time in a cluster: the process serving a namespace is killed (SIGKILL) while a writer
/// keeps writing through REST; measured from the kill to the first write the next owner
/// acknowledged, over many kills, and every acknowledged write checked at the end.
struct Takeover: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time from killing a namespace's owner to the first write acknowledged by the next one.",
        discussion: """
            Starts --nodes canopy-server processes on ports --port, --port + 1, … over the PostgreSQL \
            database --store (each advertising 127.0.0.1:PORT). One writer puts to the namespace \
            `takeover` through REST, one write after another, following 307 redirects to the owner and \
            moving to the next node when one does not answer, as a load balancer would. --kills times, \
            once writes flow, the owner is killed with SIGKILL and started again after the next owner \
            acknowledged a write. At the end every acknowledged write is read back.
            """)

    @Option(help: ArgumentHelp("The PostgreSQL database the nodes share.", valueName: "postgres-url"))
    var store: String

    @Option(help: "The canopy-server executable (default: beside canopy-load, then on PATH).")
    var serverBinary: String?

    @Option(help: "The first node's port; the others follow it.") var port = 9500
    @Option(help: "Nodes to run.") var nodes = 3
    @Option(help: "Owners to kill.") var kills = 20
    @Option(help: "The nodes' --lease-duration, in seconds.") var leaseDuration: Double = 5
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard nodes >= 2 else { throw ValidationError("--nodes must be at least 2") }
        guard kills >= 1 else { throw ValidationError("--kills must be at least 1") }
        guard (1...65535).contains(port), port + nodes - 1 <= 65535 else {
            throw ValidationError("--port leaves no room for \(nodes) nodes")
        }
    }

    func run() async throws {
        let console = Console(json: json)
        console.line(MachineInfo.current().describe)
        let (servers, root) = try await ClusterNodes.start(
            count: nodes, binary: serverBinary, store: store, firstPort: port, leaseSeconds: leaseDuration,
            prefix: "takeover")
        console.line("started \(nodes) nodes on ports \(port)–\(port + nodes - 1) over \(store)")
        let writer = ClusterWriter(ports: servers.map(\.port))
        let writing = Task { await writer.run() }
        let result: TakeoverResult
        do {
            result = try await measure(servers, writer: writer, console: console)
        } catch {
            writing.cancel()
            await writing.value
            await writer.shutdown()
            for server in servers { await server.shutDown() }
            throw error
        }
        writing.cancel()
        await writing.value
        let lost = try await writer.missing()
        await writer.shutdown()
        for server in servers { await server.shutDown() }
        try? FileManager.default.removeItem(atPath: root)
        var final = result
        final.lostAcknowledgedWrites = lost
        for line in final.describe() { console.line(line) }
        if json { try console.emit(final) }
        if lost > 0 { throw LoadError.check("\(lost) acknowledged writes are missing") }
    }

    private func measure(
        _ servers: [LaunchedServer], writer: ClusterWriter, console: Console
    ) async throws -> TakeoverResult {
        var takeovers: [Double] = []
        for kill in 1...kills {
            // Writes flow: the owner is the node that acknowledged the last 20.
            let flowing = writer.acknowledged + 20
            try await writer.waitUntil(timeout: .seconds(60)) { $0 >= flowing }
            let owner = writer.lastAcknowledgingPort
            guard let victim = servers.first(where: { $0.port == owner }) else {
                throw LoadError.check("no node acknowledged the last write")
            }
            let before = writer.acknowledged
            let killed = monotonicNanoseconds()
            await victim.stop(SIGKILL)
            try await writer.waitUntil(timeout: .seconds(60)) { $0 > before }
            let took = Double(writer.lastAcknowledgement - killed) / 1e6
            takeovers.append(took)
            console.progress(
                String(format: "kill %d of %d: %.1f ms to the next owner's first write", kill, kills, took))
            try await victim.start()
        }
        return TakeoverResult(
            nodes: servers.count, kills: kills, leaseSeconds: leaseDuration, takeoverMilliseconds: takeovers,
            acknowledgedWrites: writer.acknowledged, lostAcknowledgedWrites: 0)
    }
}

struct TakeoverResult: Encodable {
    var nodes: Int
    var kills: Int
    var leaseSeconds: Double
    var takeoverMilliseconds: [Double]
    var acknowledgedWrites: Int
    var lostAcknowledgedWrites: Int

    func percentile(_ fraction: Double) -> Double {
        let sorted = takeoverMilliseconds.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded(.up)))]
    }

    func describe() -> [String] {
        [
            String(
                format: "takeover after SIGKILL (kill → first write acknowledged by the next owner), %d kills: "
                    + "p50 %.1f ms, p99 %.1f ms, max %.1f ms (lease %.0f s)",
                kills, percentile(0.5), percentile(0.99), takeoverMilliseconds.max() ?? 0, leaseSeconds),
            "acknowledged writes: \(acknowledgedWrites), missing at the end: \(lostAcknowledgedWrites)",
        ]
    }
}

/// One REST writer over the cluster's nodes: puts `w<n>` one after another, following 307s to the
/// owner and moving to the next node when one does not answer.
final class ClusterWriter: Sendable {
    private let ports: [Int]
    private let namespace: String
    private let requestTimeout: Duration
    private let client: HTTPClient
    private let state = Mutex(State())

    private struct State {
        var current = 0
        var acknowledged: [Int] = []
        var lastAcknowledgement: UInt64 = 0
        var lastAcknowledgingPort = 0
    }

    /// A node that has not answered a write within `requestTimeout` (a paused one) is left for the next.
    init(ports: [Int], namespace: String = "takeover", requestTimeout: Duration = .seconds(10)) {
        self.ports = ports
        self.namespace = namespace
        self.requestTimeout = requestTimeout
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .milliseconds(250)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    var acknowledged: Int { state.withLock { $0.acknowledged.count } }
    var lastAcknowledgement: UInt64 { state.withLock { $0.lastAcknowledgement } }
    var lastAcknowledgingPort: Int { state.withLock { $0.lastAcknowledgingPort } }

    func run() async {
        var sequence = 0
        while !Task.isCancelled {
            if await put(sequence) {
                let now = monotonicNanoseconds()
                let port = ports[state.withLock { $0.current }]
                state.withLock { state in
                    state.acknowledged.append(sequence)
                    state.lastAcknowledgement = now
                    state.lastAcknowledgingPort = port
                }
            }
            sequence += 1
        }
    }

    /// Whether a node acknowledged write `sequence` (after redirects and moves).
    private func put(_ sequence: Int) async -> Bool {
        for _ in 0..<1000 where !Task.isCancelled {
            let port = ports[state.withLock { $0.current }]
            var request = HTTPClientRequest(
                url: "http://127.0.0.1:\(port)/w\(sequence).json?ns=\(namespace)&print=silent")
            request.method = .PUT
            request.body = .bytes(ByteBuffer(string: "\(sequence)"))
            do {
                let response = try await client.execute(request, timeout: .init(requestTimeout))
                _ = try? await response.body.collect(upTo: 1 << 16)
                switch response.status.code {
                case 200..<300:
                    return true
                case 307:
                    let location = response.headers.first(name: "Location").flatMap(URLComponents.init(string:))
                    if let owner = location?.port, let index = ports.firstIndex(of: owner) {
                        state.withLock { $0.current = index }
                    }
                case 503:
                    try? await Task.sleep(for: .milliseconds(5))
                default:
                    return false
                }
            } catch {
                state.withLock { $0.current = ($0.current + 1) % ports.count }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        return false
    }

    /// Waits until `condition` holds for the count of acknowledged writes.
    func waitUntil(timeout: Duration, _ condition: (Int) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(acknowledged) {
            guard ContinuousClock.now < deadline else {
                throw LoadError.check("no write was acknowledged for \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// How many acknowledged writes the namespace lacks, read through the owner.
    func missing() async throws -> Int {
        let stored = try await read("") as? [String: Any] ?? [:]
        return state.withLock { $0.acknowledged }.count { stored["w\($0)"] == nil }
    }

    /// The writes acknowledged so far, in order.
    var acknowledgedSequence: [Int] { state.withLock { $0.acknowledged } }

    /// The value at `path` (`""`: the namespace), read through the owner, as JSONSerialization
    /// gives it (`nil` for no data).
    func read(_ path: String) async throws -> Any? {
        var port = ports[state.withLock { $0.current }]
        for _ in 0..<10 {
            let response = try await client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(path).json?ns=\(namespace)"), timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 30)
            if response.status.code == 307,
                let owner = response.headers.first(name: "Location").flatMap(URLComponents.init(string:))?.port
            {
                port = owner
                continue
            }
            guard response.status.code == 200 else {
                throw LoadError.check("reading /\(path) back answered \(response.status.code)")
            }
            let value = try JSONSerialization.jsonObject(
                with: Data(String(buffer: body).utf8), options: .fragmentsAllowed)
            return value is NSNull ? nil : value
        }
        throw LoadError.check("reading /\(path) back was redirected too often")
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}
