import Auth
import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import PostgresStore
import Rules
import ServiceLifecycle
import Synchronization
import Tree
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
    let authenticator = Authenticator()
    let logger: Logger
    private let boundPort = BoundPort()
    let tlsCertificate = TLSCertificateSlot()
    /// What each realtime session is made with.
    let realtime: RealtimeContext

    public init(configuration: ServerConfiguration, logger: Logger = Logger(label: "canopy")) {
        self.configuration = configuration
        self.logger = logger
        let metrics = ServerMetrics()
        self.metrics = metrics
        self.databases = DatabaseRegistry(configuration: configuration, metrics: metrics, logger: logger)
        let trimmer = HeapTrimmer(logger: logger)
        let outboundBudget = OutboundBudget(limit: configuration.maxTotalPendingOutboundBytes) {
            trimmer.trimSoon()
        }
        self.outboundBudget = outboundBudget
        let boundPort = boundPort
        realtime = RealtimeContext(
            databases: databases, sessions: sessions, connections: connections, authenticator: authenticator,
            metrics: metrics, limits: RealtimeLimits(configuration), logger: logger, outboundBudget: outboundBudget,
            flushBatches: flushBatches, defaultNamespace: configuration.defaultNamespace,
            redirects: configuration.postgresURL != nil,
            advertisedHost: { requestHost in
                Self.advertisedHost(requestHost: requestHost, configuration: configuration, boundPort: boundPort)
            })
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
        let responder = CallbackResponder<ServerRequestContext> { request, context in
            try await server.respond(to: request, context: context)
        }
        let certificate = tlsCertificate.value.withLock { $0 }
        return Application(
            responder: responder,
            server: HTTPServerBuilder { responder in
                let channel = RealtimeUpgradeChannel(server: server, responder: responder)
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
        // The pool outlives the services: the last commits run as the database service stops.
        defer { postgres?.pool.cancel() }
        do {
            try await ServiceGroup(configuration: group).run()
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

    /// What the "listening" log line tells: where, the version, where the data lives, the rules file.
    func startupFacts(port: Int) -> Logger.Metadata {
        var facts: Logger.Metadata = [
            "host": "\(configuration.host)", "port": "\(port)", "version": "\(Self.version)",
            "data": "\(configuration.postgresURL != nil ? "postgresql" : configuration.dataDirectory ?? "in-memory")",
        ]
        if let rules = configuration.rulesFile { facts["rules"] = "\(rules)" }
        if servesTLS { facts["tls"] = "https, wss" }
        return facts
    }

    /// This machine's name as the kernel has it (`ProcessInfo.hostName` may ask DNS, and wait).
    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// With ``ServerConfiguration/postgresURL``: starts the connection pool, checks that PostgreSQL
    /// answers and migrates it, before anything is served.
    private func preparePostgres() async throws(StartupError) -> (storage: PostgresStorage, pool: Task<Void, Never>)? {
        guard let url = configuration.postgresURL else { return nil }
        let location: PostgresLocation
        do {
            location = try PostgresLocation(url)
        } catch {
            throw .store(problem: error.description)
        }
        let node = configuration.nodeName ?? "\(Self.hostName()):\(configuration.port)"
        let storage = PostgresStorage(
            location: location, node: node, host: configuration.advertiseHost,
            leaseDuration: configuration.leaseDuration, logger: logger)
        let pool = Task { await storage.run() }
        do {
            try await storage.prepare()
        } catch {
            pool.cancel()
            throw .store(problem: error.description)
        }
        await databases.usePostgres(storage) { [sessions] database in sessions.closeAll(using: database) }
        logger.notice("keeping namespaces in PostgreSQL", metadata: ["store": "\(location)", "node": "\(node)"])
        if let host = configuration.advertiseHost, !host.hasPrefix("s-") {
            logger.warning(
                """
                the advertised host does not begin with s-: the official JavaScript SDK falls back to \
                the host it was configured with only from a remembered host beginning with s-, so its \
                clients would keep trying this one after it stops
                """, metadata: ["host": "\(host)"])
        }
        return (storage, pool)
    }

    /// Makes the token verifier and reads the rules file, before anything is served.
    private func prepareAuthentication() async throws(StartupError) {
        var authentication = configuration.authentication
        authentication.acceptsOwner = configuration.acceptsOwner
        do {
            authenticator.start(
                try await TokenVerifier(configuration: authentication), ownerRefusal: configuration.ownerRefusal)
        } catch {
            throw .authentication(error)
        }
        if let file = configuration.rulesFile {
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw .rules(path: file, problem: "cannot read it (\(error.localizedDescription))")
            }
            do {
                await databases.useRules(StartupRules(text: text, document: try RulesDocument(parsing: text)))
            } catch {
                throw .rules(path: file, problem: error.description)
            }
        }
        if configuration.authentication.isEmulator {
            logger.warning(
                "emulator mode: 'owner' is the admin and unsigned tokens are accepted; do not expose this server")
        } else if authentication.acceptsOwner {
            logger.notice(
                """
                development server: no credential is configured, so 'owner' is the admin (as in the Firebase \
                emulator) and a namespace without rules allows everyone everything; --admin-secret, \
                --auth-secret or --jwks-file end this
                """)
        }
    }

    static func queryParameters(of target: String) -> [String: String] {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return [:] }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            parameters[name] = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
        }
        return parameters
    }
}

/// The port the server bound, once it runs.
final class BoundPort: Sendable {
    let value = Mutex<Int?>(nil)
}
