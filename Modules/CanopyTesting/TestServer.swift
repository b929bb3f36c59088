import Auth
public import CanopyServer
import Foundation
public import Logging
import NIOCore
import NIOPosix
import Synchronization

/// A ``CanopyServer`` running in this process on a free port, for tests that talk to it over real
/// WebSocket and HTTP connections.
///
/// ```swift
/// try await withTestServer { server in
///     let client = try await RealtimeTestClient.connect(to: server)
///     try await client.requestOK(.put(path: "a", data: 1, hash: nil))
///     let response = try await server.http(.GET, "/a.json")
///     #expect(response.body == "1")
/// }
/// ```
public struct TestServer: Sendable {
    /// The configuration the server runs with (its `port` is 0: see ``port`` for the bound one).
    public let configuration: ServerConfiguration
    /// The port the server bound.
    public let port: Int
    /// The server, for looking at its metrics.
    public let server: CanopyServer
    private let task: Task<Void, any Error>

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The data folder (nil when the data is kept in memory).
    public var dataDirectory: String? { configuration.dataDirectory }

    /// The realtime URL `ws://127.0.0.1:PORT/.ws?v=5&ns=NAMESPACE[&ls=LAST_SESSION]`.
    public func webSocketURL(namespace: String? = "test", lastSession: String? = nil) -> String {
        var url = "ws://127.0.0.1:\(port)/.ws?v=5"
        if let namespace { url += "&ns=\(namespace)" }
        if let lastSession { url += "&ls=\(lastSession)" }
        return url
    }

    /// The configuration tests start from: port 0, 127.0.0.1, the server's 20 s heartbeat (a CI
    /// machine starting every suite at once once kept clients from answering a 5 s one's pings for
    /// almost 9 s, and their connections were dropped; heartbeat tests set their own), a 1 s
    /// event-stream keep-alive,
    /// no fsync (commits still survive the process ending, which is what tests need), emulator
    /// mode (`owner` is the admin, as in the Firebase emulator that client tests run against), and
    /// 3 minutes for a stop (``stop()`` cancels the server): past that limit the whole test
    /// process ends, and the 30 s a production server allows ran out once on a 2-core CI machine
    /// running every suite.
    public static func defaultConfiguration(dataDirectory: String?) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.dataDirectory = dataDirectory
        configuration.heartbeatInterval = .seconds(20)
        configuration.sseKeepaliveInterval = .seconds(1)
        configuration.fsync = false
        configuration.authentication.isEmulator = true
        configuration.cancellationTimeout = .seconds(180)
        return configuration
    }

    /// A loopback port free now, for a server whose port must be known before it starts (one that
    /// advertises its own address, or is restarted where its clients expect it).
    ///
    /// Taken below the system's range of ephemeral ports, which a port-0 bind and every outgoing
    /// connection draw from: a port reserved from that range could become the source port of
    /// another test's connection before the server binds it ("address already in use", seen
    /// under a parallel build). Never the same port twice in one process. Another process could
    /// still take it first; tests accept that.
    public static func reservePort() throws -> Int {
        let candidates = candidatePorts(below: ephemeralPortRange())
        for _ in 0..<200 {
            guard let port = candidates.randomElement() else { break }
            guard reservedPorts.withLock({ $0.insert(port).inserted }) else { continue }
            if let bound = try? bindAndRelease(port), bound == port { return port }
        }
        // An ephemeral range that starts below the base: any free port, as the system picks one.
        guard let port = try bindAndRelease(0) else { throw TestServerError.noPort }
        return port
    }

    /// The ports ``reservePort()`` picks from, below `ephemeral`: empty when that range starts at
    /// or below ``reservedPortsBase``.
    static func candidatePorts(below ephemeral: ClosedRange<Int>) -> Range<Int> {
        let base = reservedPortsBase
        return base..<max(base, min(ephemeral.lowerBound, base + 16_384))
    }

    /// The lowest port ``reservePort()`` hands out.
    private static let reservedPortsBase = 10_000

    /// Ports ``reservePort()`` handed out in this process.
    private static let reservedPorts = Mutex<Set<Int>>([])

    /// Binds `port` on 127.0.0.1 and closes it again; the port bound.
    private static func bindAndRelease(_ port: Int) throws -> Int? {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(to: address).wait()
        defer { try? channel.close().wait() }
        return channel.localAddress?.port
    }

    /// The ports the system gives out for port 0 and outgoing connections: Linux's
    /// `ip_local_port_range`, or the IANA range Darwin uses.
    static func ephemeralPortRange() -> ClosedRange<Int> {
        #if os(Linux)
        if let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) {
            let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            if bounds.count == 2, bounds[0] <= bounds[1] { return bounds[0]...bounds[1] }
        }
        return 32_768...60_999
        #else
        return 49_152...65_535
        #endif
    }

    /// A logger that stays quiet unless `CANOPY_TEST_LOG_LEVEL` asks for more.
    public static func makeLogger(label: String = "canopy-test") -> Logger {
        var logger = Logger(label: label)
        let level = ProcessInfo.processInfo.environment["CANOPY_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = level ?? .critical
        return logger
    }

    /// Starts a server with `configuration` and returns once it listens (on a free port when the
    /// configuration's is 0, as ``defaultConfiguration(dataDirectory:)``'s is).
    ///
    /// With `CANOPY_TEST_STORE=postgres` a server with a data folder keeps its namespaces in
    /// PostgreSQL instead (see ``TestStore``).
    public static func start(configuration: ServerConfiguration, logger: Logger? = nil) async throws -> TestServer {
        PoolWatchdog.start()
        let configuration = try await TestStore.apply(to: configuration)
        let server = CanopyServer(configuration: configuration, logger: logger ?? makeLogger())
        let started = StartSignal()
        let task = Task {
            do {
                try await server.run { port in started.succeed(port) }
                started.fail(TestServerError.stoppedBeforeListening)
            } catch {
                started.fail(error)
                throw error
            }
        }
        let port: Int
        do {
            port = try await started.wait()
        } catch {
            task.cancel()
            _ = await task.result
            throw error
        }
        return TestServer(configuration: configuration, port: port, server: server, task: task)
    }

    /// The value of metric `name` (a sample without labels) in the server's `/metrics` text.
    public func metric(_ name: String) -> Double? {
        for line in server.metrics.exposition().split(separator: "\n") where line.hasPrefix(name + " ") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    /// The server's `canopy_connections_open` gauge: realtime connections and event streams that
    /// have not finished closing (a realtime connection counts until its onDisconnect writes ran).
    public var openConnections: Int? { metric("canopy_connections_open").map { Int($0) } }

    /// Waits until ``openConnections`` is `count`; returns whether it got there within `timeout`.
    public func waitForOpenConnections(_ count: Int, timeout: Duration = .seconds(15)) async -> Bool {
        await waitForMetric("canopy_connections_open", toBe: Double(count), timeout: timeout)
    }

    /// Waits until metric `name` is `value`; returns whether it got there within `timeout`.
    public func waitForMetric(_ name: String, toBe value: Double, timeout: Duration = .seconds(15)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if metric(name) == value { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return metric(name) == value
    }

    /// Stops the server: cancels it and waits until it has flushed its commits and ended. A stop
    /// that takes more than a minute says so on standard error, naming the port, so that a run
    /// that ends at ``ServerConfiguration/cancellationTimeout`` shows which server held it.
    public func stop() async {
        let port = port
        let notice = Task {
            try await Task.sleep(for: .seconds(60))
            FileHandle.standardError.write(
                Data("canopy-test: the server on port \(port) has taken more than 60 s to stop\n".utf8))
        }
        task.cancel()
        _ = await task.result
        notice.cancel()
    }

    /// A new, empty folder under the temporary directory.
    public static func makeTemporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-e2e-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }
}

/// Why a ``TestServer`` could not start.
public enum TestServerError: Error, CustomStringConvertible {
    case stoppedBeforeListening
    /// ``TestServer/reservePort()`` bound a socket that reported no port.
    case noPort

    public var description: String {
        switch self {
        case .stoppedBeforeListening: "the server stopped before it was listening"
        case .noPort: "a socket bound to port 0 reported no port"
        }
    }
}

/// Runs `body` against a fresh server and always stops it afterwards.
///
/// The server keeps its data in `dataDirectory`, or in a new temporary folder that is removed
/// afterwards; `configure` adjusts ``TestServer/defaultConfiguration(dataDirectory:)``.
public func withTestServer<Value: Sendable>(
    dataDirectory: String? = nil,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (TestServer) async throws -> Value
) async throws -> Value {
    let ownsDirectory = dataDirectory == nil
    let folder = try dataDirectory ?? TestServer.makeTemporaryDirectory()
    defer { if ownsDirectory { try? FileManager.default.removeItem(atPath: folder) } }
    var configuration = TestServer.defaultConfiguration(dataDirectory: folder)
    configure(&configuration)
    let server = try await TestServer.start(configuration: configuration)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Hands the bound port (or the failure to start) from the server task to ``TestServer/start``.
private final class StartSignal: Sendable {
    private struct State {
        var result: Result<Int, any Error>?
        var waiter: CheckedContinuation<Int, any Error>?
    }

    private let state = Mutex(State())

    func succeed(_ port: Int) { complete(.success(port)) }

    func fail(_ error: any Error) { complete(.failure(error)) }

    private func complete(_ result: Result<Int, any Error>) {
        let waiter: CheckedContinuation<Int, any Error>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func wait() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<Int, any Error>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
