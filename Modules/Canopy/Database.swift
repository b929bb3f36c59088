import ClientCache
public import Dispatch
public import Foundation
import Logging
import RealtimeClientSocket
import Synchronization
import Transport
import Tree

/// A Canopy (or Firebase-protocol) database: the entry point of the SDK.
///
/// ```swift
/// let database = Database.database()                    // CANOPY_DATABASE_URL, else http://127.0.0.1:9000
/// let scores = database.reference(withPath: "scores")
/// scores.child("ada").setValue(36)
/// scores.queryOrderedByValue().queryLimited(toLast: 3).observe(.childAdded) { snapshot in
///     print(snapshot.key, snapshot.value ?? "null")
/// }
/// ```
///
/// One instance exists per URL; it connects on first use and reconnects by itself. Callbacks run on
/// the main actor when written there (in a `@MainActor` class, say), else on ``callbackQueue`` (the
/// main queue on Apple platforms, a serial queue elsewhere).
public final class Database: Sendable {
    /// The database URL this instance was made for.
    public let url: String
    let endpoint: Result<RealtimeEndpoint, DatabaseError>
    private let settings: Mutex<Settings>
    /// The connector tests give; `nil` connects for real with ``serverTrust``.
    private let connector: Connector?
    private let transactionBlocks = TransactionRegistry()
    let logger: Logger

    private struct Settings {
        var callbacks: CallbackExecutor
        var persistenceEnabled = false
        var cacheSizeBytes: UInt = 10 * 1024 * 1024
        var persistenceDirectory = PersistenceManager.defaultDirectory
        var repo: Repo?
        var emulator: (host: String, port: Int)?
        var serverUpdatesBetweenCacheChecks = 1_000
        var networkPathMonitor: (any NetworkPathMonitor)? = Database.systemNetworkPathMonitor
        var reconnectBackoff = ReconnectBackoff()
        var serverTrust = ServerTrust.systemRoots
    }

    private static let instances = Mutex<[String: Database]>([:])

    /// Where ``database()`` points instead of `CANOPY_DATABASE_URL`, for tests: changing the process
    /// environment while other threads read it (`ProcessInfo.environment`, `Process.run()`) can
    /// crash them, as `setenv` may free what they are reading.
    static let defaultURLOverride = Mutex<String?>(nil)

    /// The default database: the URL in `CANOPY_DATABASE_URL`, else `http://127.0.0.1:9000`.
    public static func database() -> Database {
        let url = defaultURLOverride.withLock { $0 }
        return database(
            url: url ?? ProcessInfo.processInfo.environment["CANOPY_DATABASE_URL"] ?? "http://127.0.0.1:9000")
    }

    /// The database at `url` (`http://host:port?ns=NAME`, `https://NAME.example.com`, …); the same
    /// instance for the same URL. A URL that cannot name a database gives an instance whose every
    /// operation fails with ``DatabaseError/invalidPath(_:reason:)`` naming the URL.
    public static func database(url: String) -> Database {
        instances.withLock { instances in
            if let existing = instances[url] { return existing }
            let database = Database(url: url, connector: nil)
            instances[url] = database
            return database
        }
    }

    /// Every database ``database(url:)`` made, for ``DatabaseReference/goOffline()``.
    static var everyInstance: [Database] { instances.withLock { Array($0.values) } }

    init(url: String, connector: Connector?, logger: Logger = Logger(label: "canopy.client")) {
        self.url = url
        self.connector = connector
        self.logger = logger.answeringLoggingSwitch
        do {
            endpoint = .success(try RealtimeEndpoint(url: url))
        } catch {
            endpoint = .failure(.invalidPath(url, reason: "not a database URL: \(error)"))
        }
        settings = Mutex(Settings(callbacks: CallbackExecutor(queue: Self.defaultCallbackQueue)))
    }

    /// Network framework's path on Apple platforms, the kernel's netlink route socket on Linux.
    private static var systemNetworkPathMonitor: (any NetworkPathMonitor)? {
        #if canImport(Network)
        return NWNetworkPathMonitor()
        #elseif os(Linux)
        return NetlinkNetworkPathMonitor.shared
        #else
        return nil
        #endif
    }

    private static var defaultCallbackQueue: DispatchQueue {
        #if canImport(Darwin)
        return .main
        #else
        return DispatchQueue(label: "canopy.callbacks")
        #endif
    }

    static let realtimeConnector = realtimeConnector(trust: .system)

    /// Connects for real, accepting the server certificates `trust` accepts.
    static func realtimeConnector(trust: TLSTrust) -> Connector {
        { endpoint, lastSession in
            try await RealtimeClient.connect(
                to: endpoint, lastSession: lastSession, trust: trust,
                logger: Logger(label: "canopy.connection").answeringLoggingSwitch)
        }
    }

    // MARK: Settings

    /// Where callbacks that are not isolated to an actor run (a callback written on the main actor
    /// runs there whatever the queue). Set a serial queue, before attaching listeners.
    public var callbackQueue: DispatchQueue {
        get { settings.withLock { $0.callbacks.queue } }
        set {
            let callbacks = CallbackExecutor(queue: newValue)
            settings.withLock { settings in
                settings.callbacks = callbacks
                settings.repo?.state.withLock { $0.callbacks = callbacks }
            }
        }
    }

    /// Runs the app's callbacks (see ``callbackQueue``).
    var callbacks: CallbackExecutor { settings.withLock { $0.callbacks } }

    /// Whether synced data, pending writes and tracked queries are kept on disk. Must be set before
    /// the first reference is made; a later change is ignored and logged (``configurePersistence(enabled:cacheSizeBytes:directory:)``
    /// throws instead).
    public var isPersistenceEnabled: Bool {
        get { settings.withLock { $0.persistenceEnabled } }
        set { logErrors { () throws(DatabaseError) in try configurePersistence(enabled: newValue) } }
    }

    /// The folder persistence keeps its files in: by default `canopy` in the application-support
    /// folder on Apple platforms, in `$XDG_DATA_HOME` (or `~/.local/share`) elsewhere. Set it before
    /// the first reference is made; a later change is ignored and logged.
    ///
    /// ```swift
    /// let database = Database.database()
    /// database.persistenceDirectory = URL(fileURLWithPath: "/var/lib/myapp/canopy")
    /// database.isPersistenceEnabled = true
    /// ```
    public var persistenceDirectory: URL {
        get { settings.withLock { $0.persistenceDirectory } }
        set { logErrors { () throws(DatabaseError) in try configurePersistence(directory: newValue) } }
    }

    /// The size the on-disk cache and pending writes are kept under, in bytes: 1 MB to 100 MB,
    /// 10 MB by default. Over it, the least recently used queries no listener or `keepSynced`
    /// holds are evicted with their data; pending writes never are. Set it before the first
    /// reference is made; a value out of range or a late change is ignored and logged.
    public var persistenceCacheSizeBytes: UInt {
        get { settings.withLock { $0.cacheSizeBytes } }
        set { logErrors { () throws(DatabaseError) in try configurePersistence(cacheSizeBytes: newValue) } }
    }

    /// Sets the persistence settings given, or throws without changing any: ``DatabaseError/tooLate(_:)``
    /// once the database was used, ``DatabaseError/invalidSetting(_:reason:)`` for a cache size
    /// outside 1 MB to 100 MB.
    ///
    /// ```swift
    /// try database.configurePersistence(enabled: true, cacheSizeBytes: 50 * 1024 * 1024)
    /// ```
    public func configurePersistence(
        enabled: Bool? = nil, cacheSizeBytes: UInt? = nil, directory: URL? = nil
    ) throws(DatabaseError) {
        try settings.withLock { settings throws(DatabaseError) in
            guard settings.repo == nil else {
                throw .tooLate(
                    enabled != nil
                        ? "isPersistenceEnabled"
                        : cacheSizeBytes != nil ? "persistenceCacheSizeBytes" : "persistenceDirectory")
            }
            if let cacheSizeBytes {
                guard Self.cacheSizeRange.contains(cacheSizeBytes) else {
                    throw .invalidSetting(
                        "persistenceCacheSizeBytes",
                        reason: "\(cacheSizeBytes) is outside 1 MB to 100 MB (1048576 to 104857600)")
                }
                settings.cacheSizeBytes = cacheSizeBytes
            }
            if let enabled { settings.persistenceEnabled = enabled }
            if let directory { settings.persistenceDirectory = directory }
        }
    }

    static let cacheSizeRange: ClosedRange<UInt> = 1024 * 1024...100 * 1024 * 1024

    /// How many server updates go by between two cache size checks (1,000; tests check sooner).
    var serverUpdatesBetweenCacheChecks: Int {
        get { settings.withLock { $0.serverUpdatesBetweenCacheChecks } }
        set { settings.withLock { $0.serverUpdatesBetweenCacheChecks = newValue } }
    }

    /// Tells the SDK when the network path comes back, so it reconnects at once instead of waiting
    /// out its backoff, and when it goes away, so it drops a connection to another host at once.
    /// By default Network framework's `NWPathMonitor` on Apple platforms (`NWNetworkPathMonitor`)
    /// and the kernel's netlink route socket on Linux (`NetlinkNetworkPathMonitor.shared`); `nil`
    /// turns it off. Set it before the first
    /// reference is made; a later change is ignored and logged.
    ///
    /// ```swift
    /// database.networkPathMonitor = nil   // reconnect on the backoff alone
    /// ```
    public var networkPathMonitor: (any NetworkPathMonitor)? {
        get { settings.withLock { $0.networkPathMonitor } }
        set {
            settings.withLock { settings in
                guard settings.repo == nil else {
                    logger.error("\(DatabaseError.tooLate("networkPathMonitor"))")
                    return
                }
                settings.networkPathMonitor = newValue
            }
        }
    }

    /// The delays between reconnect attempts (tests make them long, so that only a network path
    /// event explains a prompt reconnect). Set it before the first reference is made.
    var reconnectBackoff: ReconnectBackoff {
        get { settings.withLock { $0.reconnectBackoff } }
        set { settings.withLock { $0.reconnectBackoff = newValue } }
    }

    /// Which TLS certificates the server of an `https://` URL may present: the system's trust
    /// roots by default, a private CA added, or (in tests only) one pinned self-signed
    /// certificate. Set it before the first reference is made; a later change is ignored and
    /// logged.
    ///
    /// ```swift
    /// database.serverTrust = try .addingCertificateAuthorities(pemFile: URL(fileURLWithPath: "/etc/canopy/ca.pem"))
    /// ```
    public var serverTrust: ServerTrust {
        get { settings.withLock { $0.serverTrust } }
        set {
            settings.withLock { settings in
                guard settings.repo == nil else {
                    logger.error("\(DatabaseError.tooLate("serverTrust"))")
                    return
                }
                settings.serverTrust = newValue
            }
        }
    }

    private func logErrors(_ body: () throws(DatabaseError) -> Void) {
        do { try body() } catch { logger.error("\(error)") }
    }

    /// Connects to `host:port` instead of the URL's host (the namespace stays the URL's). Call it
    /// before the first reference is made.
    public func useEmulator(withHost host: String, port: Int) {
        settings.withLock { settings in
            guard settings.repo == nil else {
                logger.error("\(DatabaseError.tooLate("useEmulator(withHost:port:)"))")
                return
            }
            settings.emulator = (host, port)
        }
    }

    /// The client state, made (and connected) on first use.
    var repo: Repo? {
        guard case .success(var endpoint) = endpoint else { return nil }
        return settings.withLock { settings in
            if let repo = settings.repo { return repo }
            if let emulator = settings.emulator {
                endpoint.host = emulator.host
                endpoint.port = emulator.port
                endpoint.secure = false
            }
            var persistence: PersistenceManager?
            if settings.persistenceEnabled {
                let file = settings.persistenceDirectory.appendingPathComponent(Self.storeFileName(endpoint)).path
                do {
                    let policy = LRUCachePolicy(
                        maxBytes: Int(settings.cacheSizeBytes),
                        serverUpdatesBetweenChecks: settings.serverUpdatesBetweenCacheChecks)
                    let store = try SQLiteClientStore(path: file, journalLimitBytes: policy.journalLimitBytes)
                    persistence = PersistenceManager(store: store, cachePolicy: policy, logger: logger)
                } catch {
                    logger.error("persistence is off, data is kept in memory only: \(error)")
                }
            }
            let repo = Repo(
                endpoint: endpoint, callbacks: settings.callbacks,
                connector: connector ?? Self.realtimeConnector(trust: settings.serverTrust.trust), logger: logger,
                persistence: persistence, transactionBlocks: transactionBlocks,
                followsHelloHost: settings.emulator == nil, reconnectBackoff: settings.reconnectBackoff,
                networkPathMonitor: settings.networkPathMonitor)
            settings.repo = repo
            if let persistence {
                repo.restoreTransactions(persistence.restoredTransactions()) {
                    DatabaseReference(database: self, path: $0, problem: nil)
                }
            }
            repo.start()
            return repo
        }
    }

    /// The store file of a database: `<host>_<port>_<namespace>.sqlite`, with characters other
    /// than letters, digits, `.` and `-` replaced by `-`.
    static func storeFileName(_ endpoint: RealtimeEndpoint) -> String {
        let name = "\(endpoint.host)_\(endpoint.port)_\(endpoint.namespace)"
        let safe = String(
            name.unicodeScalars.map { scalar -> Character in
                scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "." || scalar == "_"
                    || scalar == "-" ? Character(scalar) : "-"
            })
        return safe + ".sqlite"
    }

    /// Stops this database for good: the connection closes and the persistence store is written
    /// and closed (so another `Database` may open it, as after an app restart).
    func shutDown() {
        settings.withLock { $0.repo?.stop() }
    }

    // MARK: References

    /// The root of the database.
    public func reference() -> DatabaseReference { DatabaseReference(database: self, path: .root, problem: nil) }

    /// The location at `path` (slashes separate keys; leading and trailing ones are ignored).
    public func reference(withPath path: String) -> DatabaseReference {
        do {
            return DatabaseReference(database: self, path: try Path(validating: path), problem: nil)
        } catch {
            return DatabaseReference(database: self, path: .root, problem: Repo.databaseError(error, at: .root))
        }
    }

    /// The location a full URL names (`http://127.0.0.1:9000/users/ada?ns=demo`); it must name this
    /// database.
    public func reference(fromURL url: String) -> DatabaseReference {
        guard let components = URLComponents(string: url) else {
            return DatabaseReference(database: self, path: .root, problem: .invalidPath(url, reason: "not a URL"))
        }
        return reference(withPath: components.path)
    }

    func reference(at path: Path) -> DatabaseReference { DatabaseReference(database: self, path: path, problem: nil) }

    // MARK: Transactions

    /// Registers `block` as the update block of the transactions named `name`, for
    /// ``DatabaseReference/runTransaction(named:argument:andCompletionBlock:withLocalEvents:)``. With
    /// persistence on, such a transaction is kept on the device until it finishes: if the app stops
    /// first, it runs again in the next run once the block is registered again (register your
    /// blocks when the app starts). A put that was sent before the app stopped is resent as it
    /// was, so the server applies it at most once. `block` gets the transaction's argument
    /// (`nil` for none) as a snapshot value would be.
    ///
    /// ```swift
    /// database.registerTransaction(named: "add") { data, amount in
    ///     data.value = ((data.value as? Int) ?? 0) + ((amount as? Int) ?? 1)
    ///     return .success(withValue: data)
    /// }
    /// database.reference(withPath: "likes").runTransaction(named: "add", argument: 5)
    /// ```
    public func registerTransaction(
        named name: String, _ block: @escaping @Sendable (MutableData, Any?) -> TransactionResult
    ) {
        transactionBlocks.register(name) { data, argument in block(data, AppValue.value(argument)) }
        if let repo = settings.withLock({ $0.repo }) { repo.transactionRegistered(name) }
    }

    // MARK: Auth

    /// Authenticates this client with `token` (an ID token the server's rules see as `auth`);
    /// `nil` signs out. The token is sent first on every connection and, with persistence on, kept
    /// on the device for the next run. While the server has not accepted it (it is being checked,
    /// or it was refused, say expired while the device was offline), writes wait: they are neither
    /// sent nor failed, and go out in order once a token is accepted. Watch ``observeAuthState(_:)``
    /// to know when to supply a new one, and ``AuthState/refusal`` to know why it was refused.
    ///
    /// ```swift
    /// database.observeAuthState { state in
    ///     if case .refused = state { Task { database.setAuthToken(try await refreshToken()) } }
    /// }
    /// database.setAuthToken(idToken)
    /// ```
    public func setAuthToken(_ token: String?) { repo?.setAuthToken(token) }

    /// Gets tokens from `provider` (`nil` stops): it is called at once, on every connection (a
    /// token it returns that differs from the one in use replaces it), and with `forceRefresh` set
    /// when the server refuses the token as expired or revokes it (`ac`). Return `nil` to sign out.
    /// If it throws, ``authState`` becomes `.refused` with status `token_provider_failed` (its
    /// ``AuthState/refusal`` is ``AuthRefusal/tokenProviderFailed``) and the error's description as
    /// the reason, and writes wait as they do for a refused token.
    ///
    /// ```swift
    /// database.setAuthTokenProvider { forceRefresh in
    ///     try await Auth.auth().currentUser?.getIDToken(forcingRefresh: forceRefresh)
    /// }
    /// ```
    public func setAuthTokenProvider(_ provider: AuthTokenProvider?) { repo?.setAuthTokenProvider(provider) }

    /// How the server took the token, now.
    public var authState: AuthState { repo?.state.withLock { $0.auth.state } ?? .signedOut }

    /// Calls `callback` with the current ``AuthState`` and every change (on the main actor when
    /// written there, else on ``callbackQueue``). Returns a handle for
    /// ``removeAuthStateObserver(withHandle:)``.
    @discardableResult
    public func observeAuthState(
        @_inheritActorContext _ callback: @escaping @isolated(any) @Sendable (AuthState) -> Void
    ) -> DatabaseHandle {
        DatabaseHandle(repo?.observeAuth(callback) ?? 0)
    }

    /// Stops calling a callback given to ``observeAuthState(_:)``.
    public func removeAuthStateObserver(withHandle handle: DatabaseHandle) { repo?.removeAuthObserver(Int(handle)) }

    // MARK: Connection

    /// Disconnects and stays offline until ``goOnline()``; writes queue meanwhile.
    public func goOffline() { repo?.interrupt() }

    /// Reconnects after ``goOffline()``.
    public func goOnline() { repo?.resume() }

    /// Why the SDK cannot connect, when waiting will not fix it: ``DatabaseError/certificateRefused(_:)``
    /// when the server's TLS certificate was refused (see ``serverTrust``). `nil` once a connection
    /// opens, and while failures are the network's (the SDK retries those by itself).
    ///
    /// ```swift
    /// if let error = database.connectionError { print(error) }
    /// // the server's certificate was refused: the TLS certificate of db.example.com:443 is not trusted: …
    /// ```
    public var connectionError: DatabaseError? { repo?.state.withLock { $0.connectionError } }

    /// Cancels every write not yet acknowledged by the server: their local events are reverted and
    /// their completions get ``DatabaseError/writeCanceled``.
    public func purgeOutstandingWrites() { repo?.purgeOutstandingWrites() }

    /// The writes the server has not acknowledged yet, in the order they were made; with
    /// persistence on, those restored from an earlier run come first.
    ///
    /// ```swift
    /// for write in database.pendingWrites { try await write.acknowledged }
    /// ```
    public var pendingWrites: [WriteStatus] {
        repo?.state.withLock { state in state.writes.keys.sorted().compactMap { state.writes[$0]?.status } } ?? []
    }

    /// The bytes persistence keeps on the device (cached data and pending writes), or `nil` when
    /// persistence is off.
    public var persistenceSize: (cachedBytes: Int, pendingWriteBytes: Int)? {
        guard let size = repo?.persistence?.size else { return nil }
        return (size.serverCache, size.pendingWrites)
    }
}
