import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import Persistence
import ServiceLifecycle
import Synchronization
import UnixSignals

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Canopy server: realtime WebSocket protocol, REST and event streams over HTTP, one SQLite
/// database per namespace.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 0                      // any free port
/// let server = CanopyServer(configuration: configuration)
/// try await server.run { port in print("listening on \(port)") }
/// ```
public struct CanopyServer: Sendable {
    public let configuration: ServerConfiguration
    public let metrics: ServerMetrics
    let databases: DatabaseRegistry
    let sessions = SessionRegistry()
    let connections = OpenConnections()
    let flushBatches = FlushBatches()
    let outboundBudget: OutboundBudget
    /// Gives memory back to the system after bursts (slow readers closed, large writes).
    let heapTrimmer: HeapTrimmer
    let authenticator = Authenticator()
    let logger: Logger
    private let boundPort = BoundPort()
    let tlsCertificate = TLSCertificateSlot()
    /// What each realtime session is made with.
    let realtime: RealtimeContext
    /// Where requests and connections come from, for redirects, the proxy and the log.
    let origins: OriginResolver

    public init(configuration: ServerConfiguration, logger: Logger = Logger(label: "canopy")) {
        self.configuration = configuration
        self.logger = logger
        let metrics = ServerMetrics()
        self.metrics = metrics
        self.databases = DatabaseRegistry(configuration: configuration, metrics: metrics, logger: logger)
        let trimmer = HeapTrimmer(logger: logger)
        heapTrimmer = trimmer
        let outboundBudget = OutboundBudget(limit: configuration.maxTotalPendingOutboundBytes) {
            trimmer.trimSoon()
        }
        self.outboundBudget = outboundBudget
        origins = OriginResolver(trustedProxies: configuration.trustedProxies, servesTLS: configuration.tls != nil)
        let boundPort = boundPort
        realtime = RealtimeContext(
            databases: databases, sessions: sessions, connections: connections, authenticator: authenticator,
            metrics: metrics, limits: RealtimeLimits(configuration), logger: logger, outboundBudget: outboundBudget,
            flushBatches: flushBatches, defaultNamespace: configuration.defaultNamespace,
            redirects: configuration.postgresURL != nil,
            advertisedHost: { requestHost in
                Self.advertisedHost(requestHost: requestHost, configuration: configuration, boundPort: boundPort)
            },
            adminOrigins: AdminOriginCheck(advertiseHost: configuration.advertiseHost))
    }

    /// The `host:port` the hello message advertises (the official clients reconnect there):
    /// ``ServerConfiguration/advertiseHost``, else the `Host` the client connected to (what it can
    /// reach), else the address the server listens on.
    private static func advertisedHost(
        requestHost: String?, configuration: ServerConfiguration, boundPort: BoundPort
    ) -> String {
        if let host = configuration.advertiseHost { return host }
        if let requestHost, ServerConfiguration.isValidAdvertisedHost(requestHost) { return requestHost }
        let port = boundPort.value.withLock { $0 } ?? configuration.port
        return "\(configuration.host):\(port)"
    }

    /// The HTTP application with the realtime WebSocket upgrade at `/.ws`.
    func makeApplication(onRunning: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let server = self
        let certificate = tlsCertificate.value.withLock { $0 }
        let (realtime, origins) = (realtime, origins)
        return Application(
            responder: makeRouter(),
            server: HTTPServerBuilder { responder in
                let channel = RealtimeUpgradeChannel(realtime: realtime, origins: origins, responder: responder)
                guard let certificate else { return channel }
                return TLSServerChannel(base: channel, certificate: certificate)
            },
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "Canopy",
                // A reconnect storm opens thousands of connections at once; Hummingbird's default
                // of 256 drops their SYNs and clients wait out retransmissions (1 s, 3 s).
                backlog: 4096),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? server.configuration.port
                server.boundPort.value.withLock { $0 = port }
                server.logger.notice("canopy-server listening", metadata: server.startupFacts(port: port))
                await onRunning(port)
            },
            logger: logger
        )
    }

    /// The controllers of plain HTTP requests, with what each needs of the server.
    func makeRouter() -> ServerRouter {
        let eventStreams = EventStreamController(
            connections: connections, metrics: metrics, outboundBudget: outboundBudget,
            maxPendingBytes: configuration.maxPendingOutboundBytes,
            keepaliveInterval: configuration.sseKeepaliveInterval, logger: logger)
        let forwarder = RESTForwarder(
            forwarding: configuration.restForwarding, origins: origins, nodeName: configuration.nodeName,
            caFile: configuration.tlsCAFile, maxPendingBytes: configuration.maxPendingOutboundBytes, logger: logger)
        let rest = RESTController(
            databases: databases, authenticator: authenticator, eventStreams: eventStreams, forwarder: forwarder,
            defaultNamespace: configuration.defaultNamespace, maxBodyBytes: configuration.maxMessageBytes,
            logger: logger, adminOrigins: AdminOriginCheck(advertiseHost: configuration.advertiseHost),
            afterLargeWrite: { [heapTrimmer] in heapTrimmer.trimSoon() })
        var router = ServerRouter(
            status: StatusController(metrics: metrics), console: ConsoleController(), rest: rest, origins: origins,
            metrics: metrics, logger: logger)
        router.consoleAPI = ConsoleAdminAPI(
            databases: databases, sessions: sessions, metrics: metrics, rest: rest, nodeName: configuration.nodeName)
        return router
    }

    /// Runs until cancelled or, with `handleSignals`, until SIGINT/SIGTERM; then shuts down
    /// gracefully, within ``ServerConfiguration/shutdownTimeout``:
    ///
    /// 1. event streams end and no new one starts;
    /// 2. the listener stops accepting, realtime connections are closed (`going away`) and in-flight
    ///    requests finish;
    /// 3. once every closed connection handed its onDisconnect writes to its database, everything
    ///    queued is committed.
    ///
    /// Past the timeout the remaining steps are cancelled; what the commit queues hold is still
    /// committed before this returns.
    ///
    /// Throws ``StartupError`` when the data folder, the store, the rules file or the credentials are
    /// unusable, or the address cannot be listened on.
    public func run(
        handleSignals: Bool = false, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let certificate = try prepareTLS()
        let postgres = try await preparePostgres()
        if postgres == nil { try configuration.prepareDataDirectory() }
        let folderLock = postgres == nil ? try configuration.lockDataDirectory() : nil
        defer { folderLock?.release() }
        try await prepareAuthentication()
        let application = makeApplication(onRunning: onRunning)
        // A service group shuts its services down in reverse order, each after the one behind it.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(
                service: DatabaseService(
                    registry: databases, connections: connections, sessions: sessions, logger: logger)),
            .init(service: application),
            .init(service: ShutdownNotice(connections: connections, logger: logger)),
        ]
        if let certificate {
            // Trapped now: a SIGHUP before the service runs would otherwise end the process.
            let hangups = handleSignals ? await UnixSignalsSequence(trapping: .sighup) : nil
            services.append(
                .init(
                    service: TLSRenewal(
                        certificate: certificate, checkInterval: configuration.tlsCheckInterval, hangups: hangups)))
        }
        var group = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            logger: logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        group.maximumCancellationDuration = configuration.cancellationTimeout
        let outcome: Result<Void, any Error>
        do {
            try await ServiceGroup(configuration: group).run()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        // The pool outlives the services: the last commits run as the database service stops. Its
        // end releases the node lock, which a process started next under this node name needs.
        if let postgres { await Self.stop(postgres.pool, within: configuration.cancellationTimeout ?? .seconds(30)) }
        do {
            try outcome.get()
        } catch let error as IOError where boundPort.value.withLock({ $0 }) == nil {
            if error.errnoCode == EADDRINUSE {
                throw StartupError.addressInUse(host: configuration.host, port: configuration.port)
            }
            throw StartupError.cannotListen(host: configuration.host, port: configuration.port, errno: error.errnoCode)
        } catch is SocketAddressError where boundPort.value.withLock({ $0 }) == nil {
            throw StartupError.cannotListen(host: configuration.host, port: configuration.port, errno: nil)
        }
        logger.notice("canopy-server stopped")
    }

    /// Cancels `task` and waits for it to end, for at most `limit` (a store that does not answer
    /// must not hold the shutdown).
    ///
    /// Called from a cancelled task (the server's own, once it is stopped), so it waits on a
    /// continuation: iterating a stream there ends at once (the pool, and the node lock it holds,
    /// outlived the server, and a server started next under its node name was refused), and a task
    /// group would wait for `task` however long that takes.
    static func stop(_ task: Task<Void, Never>, within limit: Duration) async {
        task.cancel()
        let waiter = Waiter()
        Task {
            await task.value
            waiter.resume()
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            waiter.resume()
        }
        await withCheckedContinuation { waiter.wait($0) }
        timer.cancel()
    }

    /// What ``stop(_:within:)`` waits on: resumed once, by whichever comes first (also before the
    /// wait begins).
    private final class Waiter: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Void, Never>?
            var done = false
        }

        private let state = Mutex(State())

        func wait(_ continuation: CheckedContinuation<Void, Never>) {
            let done = state.withLock { state in
                if !state.done { state.continuation = continuation }
                return state.done
            }
            if done { continuation.resume() }
        }

        func resume() {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.done else { return nil }
                state.done = true
                return state.continuation.take()
            }
            waiting?.resume()
        }
    }
}

/// The port the server bound, once it runs.
final class BoundPort: Sendable {
    let value = Mutex<Int?>(nil)
}
