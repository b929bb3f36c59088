public import Auth
import Tree

/// How a ``CanopyServer`` runs. Every field has a working default.
public struct ServerConfiguration: Sendable {
    /// Address to bind (default `127.0.0.1`).
    public var host: String = "127.0.0.1"
    /// Port to bind; `0` picks a free one (default `9000`).
    public var port: Int = 9000
    /// Folder holding one SQLite database per namespace; `nil` keeps data in memory only. Unused
    /// with ``postgresURL``. A running server holds it locked (`canopy.lock` in it): a second
    /// server on the same folder stops at start with ``StartupError/dataDirectory(path:problem:)``.
    public var dataDirectory: String? = "./canopy-data"
    /// A PostgreSQL URL (`postgres://USER@HOST:PORT/DATABASE`, `?host=/socket/directory` for a Unix
    /// socket): every namespace is kept in that database instead of ``dataDirectory``, and this
    /// process serves a namespace only while it holds its lease there.
    public var postgresURL: String?
    /// This process's name among the servers sharing ``postgresURL`` (default `<hostname>:<port>`),
    /// unique among the running ones: a second process under a running one's name is refused at
    /// start.
    public var nodeName: String?
    /// Where clients reach this process, `host[:port]` (such as `s-node1.example.com:9000`): sent in
    /// the realtime hello, and, with ``postgresURL``, to clients of a namespace this process serves
    /// that reached another process (the realtime redirect `r`, REST `307`). Firebase's clients
    /// remember a host beginning with `s-` across restarts. `nil`: the address the server listens
    /// on, and other processes answer `503` instead of redirecting.
    public var advertiseHost: String?
    /// The reverse proxies (and, in a cluster, the other processes) whose `X-Forwarded-For` and
    /// `X-Forwarded-Proto` headers are believed: the client's address in the logs and the scheme of
    /// redirects come from them only when the TCP peer is in one of these networks (see
    /// ``ClientOrigin``). Empty, the default: those headers are ignored.
    public var trustedProxies: [IPNetwork] = []
    /// How long a namespace stays this process's in PostgreSQL without a commit or a renewal.
    public var leaseDuration: Duration = .seconds(5)
    /// How a REST request for a namespace another process serves reaches it: proxied when it
    /// carries an `Authorization` header (which clients drop when they follow a redirect to another
    /// host), redirected otherwise, by default.
    public var restForwarding: RESTForwarding = .auto
    /// Serve HTTPS and `wss://` on ``port`` with this certificate and key instead of plain HTTP and
    /// `ws://`; `nil` (the default) serves plain. A connection that does not begin with a TLS
    /// handshake is answered `400`. In a cluster every process serves TLS or none does (clients keep
    /// their scheme when redirected).
    public var tls: TLSFiles?
    /// How often the ``tls`` files are read again to pick up a renewed certificate (`SIGHUP` does it
    /// at once).
    public var tlsCheckInterval: Duration = .seconds(30)
    /// A PEM file of CA certificates trusted, besides the system's, for the certificates of the other
    /// processes of the cluster when a REST request is proxied to one that serves TLS.
    public var tlsCAFile: String?
    /// The namespace of clients that name none (no `ns`, and a Host that is an IP or localhost).
    public var defaultNamespace: String = "default"
    /// Whether a write to a namespace that does not exist creates it (otherwise it is refused: REST
    /// answers 404). `nil`, the default, creates namespaces only when ``host`` is a loopback address.
    /// Reading or listening never creates one: a namespace nobody wrote to reads as empty and has
    /// no file.
    public var createsNamespaces: Bool?
    /// Most namespaces open at once. Opening one more first closes the namespace unused for the
    /// longest; when every open one is in use, the new one is refused (REST 503).
    public var maxOpenNamespaces: Int = 1000
    /// A namespace no connection, event stream or request has used for this long is closed (its
    /// queued writes committed, its file closed); the next use opens it again. Not with in-memory
    /// data, which would be lost.
    public var namespaceIdleTimeout: Duration = .seconds(300)
    /// Interval of the server's WebSocket pings; a peer silent for two intervals is dropped.
    public var heartbeatInterval: Duration = .seconds(20)
    /// Interval of `keep-alive` events on REST event streams.
    public var sseKeepaliveInterval: Duration = .seconds(30)
    /// Largest realtime message or REST body accepted, in bytes.
    public var maxMessageBytes: Int = 16 * 1024 * 1024
    /// Bytes of one realtime connection's requests waiting to be handled past which the server stops
    /// reading from it (TCP then slows the client down) until they were handled.
    public var maxPendingRequestBytes: Int = 4 * 1024 * 1024
    /// Most bytes queued for a realtime connection that does not read them (a stalled or too slow
    /// client); past it the server closes the connection, which runs its onDisconnect writes.
    public var maxPendingOutboundBytes: Int = 64 * 1024 * 1024
    /// Most listens one realtime connection may hold at once; one more is refused with status
    /// `too_many_listens` (the client's listener gets an error; its other listens go on).
    public var maxListensPerConnection: Int = 10000
    /// Most bytes the onDisconnect operations of one realtime connection may hold (paths and values
    /// as JSON text); one that would pass it is refused with status `too_big`.
    public var maxOnDisconnectBytes: Int = 1024 * 1024
    /// Most bytes queued for all readers that do not keep up, together (realtime connections and
    /// event streams holding at least 64 KiB each); past it the one stalled for the longest is
    /// closed first, until the total is back under.
    public var maxTotalPendingOutboundBytes: Int = 256 * 1024 * 1024
    /// Most sorted indexes a node keeps for queries ordered by priority, value or a child (they
    /// cost every write below the node O(log n) each); building one more drops the one used least
    /// recently. Each namespace follows its server's setting (``IndexRetention``).
    public var maxQueryIndexesPerNode: Int = 8
    /// An index no query used for this long is dropped by the next write to its node.
    public var queryIndexIdleTimeout: Duration = .seconds(60)
    /// Writes a namespace may have applied and not yet committed (its disk stalled or slower than
    /// the writes arriving) before new writes are refused with status `unavailable` (REST 503).
    public var maxUncommittedWrites: Int = 100_000
    /// Whether commits are fsynced (survive power loss) or only written (survive a process crash).
    public var fsync: Bool = true
    /// Longest a graceful shutdown waits for connections to close and hand over their onDisconnect
    /// writes before it cancels what is left (queued commits are still written).
    public var shutdownTimeout: Duration = .seconds(10)
    /// Longest what is left may take to stop once the server is cancelled (or a graceful shutdown
    /// ran out of time): committing what is queued and closing the stores. Past it the process ends
    /// with a fatal error (ServiceGroup's `maximumCancellationDuration`); `nil` waits as long as it
    /// takes.
    public var cancellationTimeout: Duration? = .seconds(30)
    /// How clients prove who they are: the keys of ID tokens, their issuer and audience, the admin
    /// secret, emulator mode. By default no token is accepted and every client is unauthenticated.
    public var authentication = TokenVerifierConfiguration()
    /// A rules document (JSON with comments, as Firebase's `database.rules.json`) applied to every
    /// namespace when it opens, replacing the rules it stored; `nil` keeps each namespace's own.
    /// A namespace that never had rules set allows everything.
    public var rulesFile: String?

    public init() {}

    /// Whether writes create namespaces: ``createsNamespaces``, or when that is `nil`, whether
    /// ``host`` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
    public var createsNamespacesOnWrite: Bool {
        createsNamespaces ?? Self.isLoopback(host)
    }

    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
