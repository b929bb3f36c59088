import ArgumentParser
import Auth
import CanopyServer
import Foundation
import Logging

/// `canopy-server`: runs the database server.
@main
struct CanopyServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy-server",
        abstract: "A realtime JSON-tree database speaking Firebase's realtime protocol and REST dialect.",
        discussion: """
            With no options it serves 127.0.0.1:9000 and keeps one SQLite database per namespace in \
            ./canopy-data. Every option can also be set through the environment variable named beside it.

            Without a credential (--admin-secret, --auth-secret, --jwks-file) a server on a loopback \
            address is a development server: 'owner', the Firebase emulator's admin credential, is its \
            admin. Give secrets through their variables: every user of the machine sees a process's \
            options (ps), not its environment.

            With --tls-cert-file and --tls-key-file the port serves HTTPS and wss:// (TLS 1.2 and 1.3) \
            and answers plain HTTP with an error; SIGHUP, or a change of the files noticed within \
            --tls-check-interval, serves a renewed certificate to new connections without a restart.
            """,
        version: CanopyServer.version)

    @Option(help: "Address to bind. (CANOPY_HOST)")
    var host: String = env("CANOPY_HOST") ?? "127.0.0.1"

    @Option(help: "Port to bind; 0 picks a free port. (CANOPY_PORT)")
    var port: Int = env("CANOPY_PORT").flatMap(Int.init) ?? 9000

    @Option(name: .customLong("data"), help: "Folder for the SQLite databases. (CANOPY_DATA)")
    var dataDirectory: String = env("CANOPY_DATA") ?? "./canopy-data"

    @Flag(help: "Keep data in memory only (nothing is written to disk). (CANOPY_IN_MEMORY=true)")
    var inMemory = false

    @Option(
        help: ArgumentHelp(
            "Where namespaces live: sqlite (one file per namespace in --data), or PostgreSQL 15+ as "
                + "postgres://USER[:PASSWORD]@HOST:PORT/DB (?host=/socket/directory for a Unix socket). "
                + "(CANOPY_STORE)",
            valueName: "sqlite|url"))
    var store: String = env("CANOPY_STORE") ?? "sqlite"

    @Option(
        help: ArgumentHelp(
            "With a PostgreSQL --store: this process's name among the servers sharing the database "
                + "(default HOSTNAME:PORT). (CANOPY_NODE_NAME)"))
    var nodeName: String = env("CANOPY_NODE_NAME") ?? ""

    @Option(
        help: ArgumentHelp(
            "HOST[:PORT] where clients reach this process (begin it with s-, as s-node1.example.com:9000): "
                + "sent in the realtime hello, and, with a PostgreSQL --store, where other processes redirect "
                + "clients of the namespaces this one serves. (CANOPY_ADVERTISE_HOST)",
            valueName: "host[:port]"))
    var advertiseHost: String = env("CANOPY_ADVERTISE_HOST") ?? ""

    @Option(
        help: ArgumentHelp(
            "Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto headers are believed (the client's "
                + "address in the logs, the scheme of redirects); in a cluster, list the other processes' "
                + "addresses too. From any other address those headers are ignored. (CANOPY_TRUSTED_PROXIES)",
            valueName: "cidr[,cidr...]"))
    var trustedProxies: String?

    @Option(
        help: ArgumentHelp(
            "With a PostgreSQL --store: seconds a namespace stays this process's without a commit or a renewal. "
                + "(CANOPY_LEASE_DURATION)"))
    var leaseDuration: Double = env("CANOPY_LEASE_DURATION").flatMap(Double.init) ?? 5

    @Option(
        help: ArgumentHelp(
            "With a PostgreSQL --store, how a REST request for a namespace another process serves reaches it: "
                + "auto (proxied when it carries an Authorization header, which clients drop when they follow a "
                + "redirect to another host; redirected otherwise), redirect (307) or proxy. (CANOPY_REST_FORWARDING)",
            valueName: "auto|redirect|proxy"))
    var restForwarding: String = env("CANOPY_REST_FORWARDING") ?? "auto"

    @Option(
        help: ArgumentHelp(
            "Serve HTTPS and wss:// on --port with this PEM certificate (the chain may follow it, as in "
                + "certbot's fullchain.pem); needs --tls-key-file. Renewed files are picked up on SIGHUP and "
                + "within --tls-check-interval. (CANOPY_TLS_CERT_FILE)",
            valueName: "path"))
    var tlsCertFile: String?

    @Option(
        help: ArgumentHelp(
            "The PEM private key of --tls-cert-file's certificate, unencrypted. (CANOPY_TLS_KEY_FILE)",
            valueName: "path"))
    var tlsKeyFile: String?

    @Option(
        help: ArgumentHelp(
            "With TLS: seconds between checks of the certificate and key files for a renewed pair. "
                + "(CANOPY_TLS_CHECK_INTERVAL)"))
    var tlsCheckInterval: Double = env("CANOPY_TLS_CHECK_INTERVAL").flatMap(Double.init) ?? 30

    @Option(
        help: ArgumentHelp(
            "With a PostgreSQL --store and TLS: PEM file of CA certificates trusted, besides the system's, "
                + "for the other processes' certificates when a REST request is proxied. (CANOPY_TLS_CA_FILE)",
            valueName: "path"))
    var tlsCAFile: String?

    @Option(help: "Namespace for clients that name none. (CANOPY_DEFAULT_NAMESPACE)")
    var defaultNamespace: String = env("CANOPY_DEFAULT_NAMESPACE") ?? "default"

    @Option(
        help: "Seconds between WebSocket pings; a peer silent for two intervals is dropped. (CANOPY_HEARTBEAT_INTERVAL)"
    )
    var heartbeatInterval: Double = env("CANOPY_HEARTBEAT_INTERVAL").flatMap(Double.init) ?? 20

    @Option(help: "Seconds between keep-alive events on REST event streams. (CANOPY_SSE_KEEPALIVE_INTERVAL)")
    var sseKeepaliveInterval: Double = env("CANOPY_SSE_KEEPALIVE_INTERVAL").flatMap(Double.init) ?? 30

    @Option(help: "Largest realtime message or REST body accepted, in bytes. (CANOPY_MAX_MESSAGE_BYTES)")
    var maxMessageBytes: Int = env("CANOPY_MAX_MESSAGE_BYTES").flatMap(Int.init) ?? 16 * 1024 * 1024

    @Option(
        help: """
            Most bytes queued for a realtime connection that does not read them; past it the connection \
            is closed. (CANOPY_MAX_PENDING_OUTBOUND_BYTES)
            """)
    var maxPendingOutboundBytes: Int =
        env("CANOPY_MAX_PENDING_OUTBOUND_BYTES").flatMap(Int.init) ?? 64 * 1024 * 1024

    @Flag(
        inversion: .prefixedNo,
        help: """
            Whether a write to a namespace that does not exist creates it (reads never do; the default \
            namespace is always created). Default: on when --host is a loopback address, else off. \
            (CANOPY_CREATE_NAMESPACES)
            """)
    var createNamespaces: Bool?

    @Option(
        help: """
            Most namespaces open at once; the one unused for the longest is closed to make room, and when \
            all are in use a new one is refused. (CANOPY_MAX_OPEN_NAMESPACES)
            """)
    var maxOpenNamespaces: Int = env("CANOPY_MAX_OPEN_NAMESPACES").flatMap(Int.init) ?? 1000

    @Option(
        help: """
            Seconds a namespace no connection, event stream or request uses stays open. \
            (CANOPY_NAMESPACE_IDLE_TIMEOUT)
            """)
    var namespaceIdleTimeout: Double = env("CANOPY_NAMESPACE_IDLE_TIMEOUT").flatMap(Double.init) ?? 300

    @Option(
        help: """
            Bytes of one realtime connection's requests waiting to be handled past which it is not read \
            until they were. (CANOPY_MAX_PENDING_REQUEST_BYTES)
            """)
    var maxPendingRequestBytes: Int = env("CANOPY_MAX_PENDING_REQUEST_BYTES").flatMap(Int.init) ?? 4 * 1024 * 1024

    @Option(
        help: """
            Most bytes queued for all readers that do not keep up, together; past it the one stalled for \
            the longest is closed first. (CANOPY_MAX_TOTAL_PENDING_OUTBOUND_BYTES)
            """)
    var maxTotalPendingOutboundBytes: Int =
        env("CANOPY_MAX_TOTAL_PENDING_OUTBOUND_BYTES").flatMap(Int.init) ?? 256 * 1024 * 1024

    @Option(
        help: """
            Writes a namespace may have applied and not yet committed (a stalled or slow disk) before new \
            writes are refused (unavailable, REST 503). (CANOPY_MAX_UNCOMMITTED_WRITES)
            """)
    var maxUncommittedWrites: Int = env("CANOPY_MAX_UNCOMMITTED_WRITES").flatMap(Int.init) ?? 100_000

    @Option(
        help: """
            Most sorted indexes a node keeps for queries ordered by priority, value or a child; one more \
            drops the least recently used. (CANOPY_MAX_QUERY_INDEXES_PER_NODE)
            """)
    var maxQueryIndexesPerNode: Int = env("CANOPY_MAX_QUERY_INDEXES_PER_NODE").flatMap(Int.init) ?? 8

    @Option(
        help: """
            Seconds a query index no query uses is kept. (CANOPY_QUERY_INDEX_IDLE_TIMEOUT)
            """)
    var queryIndexIdleTimeout: Double = env("CANOPY_QUERY_INDEX_IDLE_TIMEOUT").flatMap(Double.init) ?? 60

    @Option(
        help: """
            Most listens one realtime connection may hold; more are refused (too_many_listens). \
            (CANOPY_MAX_LISTENS_PER_CONNECTION)
            """)
    var maxListensPerConnection: Int = env("CANOPY_MAX_LISTENS_PER_CONNECTION").flatMap(Int.init) ?? 10000

    @Option(
        help: """
            Most bytes the onDisconnect operations of one realtime connection may hold; more are refused \
            (too_big). (CANOPY_MAX_ON_DISCONNECT_BYTES)
            """)
    var maxOnDisconnectBytes: Int = env("CANOPY_MAX_ON_DISCONNECT_BYTES").flatMap(Int.init) ?? 1024 * 1024

    @Flag(
        inversion: .prefixedNo,
        help: """
            fsync every commit (survives power loss); without, commits survive a process crash only. \
            (CANOPY_FSYNC=false)
            """)
    var fsync = envFlag("CANOPY_FSYNC") ?? true

    @Option(
        help: """
            Seconds a graceful shutdown (SIGTERM, SIGINT) waits for connections to close and hand over \
            their onDisconnect writes before it cancels the rest; queued commits are still written. \
            (CANOPY_SHUTDOWN_TIMEOUT)
            """)
    var shutdownTimeout: Double = env("CANOPY_SHUTDOWN_TIMEOUT").flatMap(Double.init) ?? 10

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. (CANOPY_LOG_LEVEL)")
    var logLevel: String = env("CANOPY_LOG_LEVEL") ?? "info"

    @Option(
        help: """
            Rules document (JSON with comments, like Firebase's database.rules.json) applied to every \
            namespace, replacing its stored rules. Without it a namespace that never had rules set allows \
            everything. (CANOPY_RULES)
            """)
    var rules: String?

    @Option(
        help: """
            Secret of HS256 ID tokens, at least 32 bytes; prefer the variable, which ps does not show. \
            (CANOPY_AUTH_SECRET)
            """)
    var authSecret: String?

    @Option(help: "JWKS file with the public keys of RS256 and ES256 ID tokens. (CANOPY_JWKS_FILE)")
    var jwksFile: String?

    @Option(
        help: """
            Issuer every ID token must name, e.g. https://securetoken.google.com/PROJECT. (CANOPY_AUTH_ISSUER)
            """)
    var authIssuer: String?

    @Option(help: "Audience every ID token must name, e.g. the Firebase project id. (CANOPY_AUTH_AUDIENCE)")
    var authAudience: String?

    @Option(help: "Seconds of clock skew allowed on token expiry and start times. (CANOPY_AUTH_CLOCK_SKEW)")
    var authClockSkew: Double = env("CANOPY_AUTH_CLOCK_SKEW").flatMap(Double.init) ?? 60

    @Option(help: "Largest credential looked at, in bytes. (CANOPY_AUTH_MAX_TOKEN_BYTES)")
    var authMaxTokenBytes: Int = env("CANOPY_AUTH_MAX_TOKEN_BYTES").flatMap(Int.init) ?? 8192

    @Option(
        help: """
            Admin credential (the rules do not apply to it), sent as ?auth=SECRET or \
            'Authorization: Bearer SECRET'; prefer the variable, which ps does not show. (CANOPY_ADMIN_SECRET)
            """)
    var adminSecret: String?

    @Flag(
        help: """
            Behave like the Firebase emulator: 'owner' is the admin whatever else is configured, and the \
            SDKs' unsigned mock tokens are accepted. Never on a server others can reach. (CANOPY_EMULATOR=true)
            """)
    var emulator = false

    func run() async throws {
        var logger = Logger(label: "canopy-server")
        logger.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
        Self.raiseFileLimit(logger: logger)
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        // Not the flag's default: ArgumentParser refuses a flag without inversion that defaults to true.
        let keepInMemory = inMemory || envFlag("CANOPY_IN_MEMORY") == true
        configuration.dataDirectory = keepInMemory ? nil : dataDirectory
        if store != "sqlite" {
            guard !keepInMemory else { throw ValidationError("--store and --in-memory exclude each other") }
            configuration.postgresURL = store
        }
        configuration.nodeName = nodeName.isEmpty ? nil : nodeName
        if !advertiseHost.isEmpty {
            guard ServerConfiguration.isValidAdvertisedHost(advertiseHost) else {
                throw ValidationError(
                    "--advertise-host \"\(advertiseHost)\" is not HOST or HOST:PORT (no scheme, path or spaces)")
            }
            configuration.advertiseHost = advertiseHost
        }
        configuration.restForwarding = RESTForwarding(rawValue: restForwarding) ?? .auto
        configuration.trustedProxies = try IPNetwork.list(
            parsing: trustedProxies ?? env("CANOPY_TRUSTED_PROXIES") ?? "")
        configuration.leaseDuration = .milliseconds(Int(leaseDuration * 1000))
        configuration.defaultNamespace = defaultNamespace
        configuration.createsNamespaces = createNamespaces ?? envFlag("CANOPY_CREATE_NAMESPACES")
        configuration.maxOpenNamespaces = maxOpenNamespaces
        configuration.maxListensPerConnection = maxListensPerConnection
        configuration.maxQueryIndexesPerNode = maxQueryIndexesPerNode
        configuration.maxUncommittedWrites = maxUncommittedWrites
        configuration.queryIndexIdleTimeout = .milliseconds(Int(queryIndexIdleTimeout * 1000))
        configuration.maxTotalPendingOutboundBytes = maxTotalPendingOutboundBytes
        configuration.maxPendingRequestBytes = maxPendingRequestBytes
        configuration.maxOnDisconnectBytes = maxOnDisconnectBytes
        configuration.namespaceIdleTimeout = .milliseconds(Int(namespaceIdleTimeout * 1000))
        configuration.heartbeatInterval = .milliseconds(Int(heartbeatInterval * 1000))
        configuration.sseKeepaliveInterval = .milliseconds(Int(sseKeepaliveInterval * 1000))
        configuration.maxMessageBytes = maxMessageBytes
        configuration.maxPendingOutboundBytes = maxPendingOutboundBytes
        configuration.fsync = fsync
        configuration.shutdownTimeout = .milliseconds(Int(shutdownTimeout * 1000))
        // Optional options read their variable here: ArgumentParser deprecates defaults on them.
        configuration.rulesFile = rules ?? env("CANOPY_RULES")
        configuration.authentication.sharedSecret = authSecret ?? env("CANOPY_AUTH_SECRET")
        configuration.authentication.keySet = (jwksFile ?? env("CANOPY_JWKS_FILE")).map {
            .file(URL(fileURLWithPath: $0))
        }
        configuration.authentication.issuer = authIssuer ?? env("CANOPY_AUTH_ISSUER")
        configuration.authentication.audience = authAudience ?? env("CANOPY_AUTH_AUDIENCE")
        configuration.authentication.clockSkew = authClockSkew
        configuration.authentication.maximumTokenBytes = authMaxTokenBytes
        configuration.authentication.adminSecret = adminSecret ?? env("CANOPY_ADMIN_SECRET")
        configuration.authentication.isEmulator = emulator || envFlag("CANOPY_EMULATOR") == true
        if let certificate = tlsCertFile ?? env("CANOPY_TLS_CERT_FILE"),
            let key = tlsKeyFile ?? env("CANOPY_TLS_KEY_FILE")
        {
            configuration.tls = TLSFiles(certificate: certificate, key: key)
        }
        configuration.tlsCheckInterval = .milliseconds(Int(tlsCheckInterval * 1000))
        configuration.tlsCAFile = tlsCAFile ?? env("CANOPY_TLS_CA_FILE")
        let server = CanopyServer(configuration: configuration, logger: logger)
        do {
            try await server.run(handleSignals: true)
        } catch let error as StartupError {
            // One line a new user can act on, not a stack of log metadata.
            FileHandle.standardError.write(Data("canopy-server: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}

func env(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }

/// A boolean environment variable: `true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off`; `nil` when unset
/// or anything else.
func envFlag(_ name: String) -> Bool? {
    switch env(name)?.lowercased() {
    case "true", "1", "yes", "on": true
    case "false", "0", "no", "off": false
    default: nil
    }
}
