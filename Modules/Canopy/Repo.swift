import Dispatch
import Foundation
import Logging
import Query
import RealtimeClientSocket
import SyncEngine
import Synchronization
import Transport
import Tree

/// One database's client state: the sync tree (server data and pending writes), the listeners,
/// and the connection to the server.
///
/// Threading: every call changes the state under one lock and returns at once; events are handed
/// to the database's ``CallbackExecutor`` in the order they happened, and messages are queued on
/// the connection in the order the calls were made, so the server sees writes in app order. No app
/// code ever runs under the lock.
final class Repo: Sendable {
    let endpoint: RealtimeEndpoint
    /// Whether later connections go to the host the server's hello names, as the official clients
    /// do (not with ``Database/useEmulator(withHost:port:)``, as theirs do not).
    let followsHelloHost: Bool
    let logger: Logger
    let connector: Connector
    let state: Mutex<State>
    let listenRequests: ListenRequests
    /// Names this client in the ``WriteID``s of its writes, for servers that take them; kept with
    /// persistence, so writes restored after a restart keep their ids.
    let clientID: String
    /// The device store, when persistence is on.
    let persistence: PersistenceManager?
    /// The transaction blocks the app registered by name.
    let transactionBlocks: TransactionRegistry
    /// The delays between reconnect attempts.
    let reconnectBackoff: ReconnectBackoff
    /// Says when the network path comes back (reconnect at once) or goes away (drop at once).
    let networkPathMonitor: (any NetworkPathMonitor)?
    /// The connection loop and the network path watch, started on first use.
    private let loop = Mutex<(connection: Task<Void, Never>, networkPath: Task<Void, Never>)?>(nil)

    /// A listener: what it listens to and whom to tell.
    struct Observer: Sendable {
        /// The app's block, in the form it gave it (isolated where it was written).
        enum Callback: Sendable {
            case snapshot(@isolated(any) @Sendable (DataSnapshot) -> Void)
            case snapshotAndPreviousKey(@isolated(any) @Sendable (DataSnapshot, String?) -> Void)
            /// Keeps data synced with nothing to tell (`keepSynced`, a running transaction).
            case none

            /// Hands `snapshot` (and `previousKey`, to a block that takes it) to the app's block.
            func deliver(_ snapshot: DataSnapshot, previousKey: String?, to callbacks: CallbackExecutor) {
                switch self {
                case .snapshot(let callback): callbacks.deliver(callback, snapshot)
                case .snapshotAndPreviousKey(let callback): callbacks.deliver(callback, snapshot, previousKey)
                case .none: break
                }
            }
        }

        let query: DatabaseQuery
        let registration: EventRegistration
        let callback: Callback
        let cancel: (@isolated(any) @Sendable (any Error) -> Void)?
        /// Removed after its first event (`observeSingleEvent`).
        let once: Bool
        /// Also told when only a snapshot's metadata changes.
        var includeMetadataChanges = false
        /// Event types registered only to follow the data, not told (a `.childChanged` listener
        /// with `includeMetadataChanges` follows `.childAdded`: a new child has no earlier metadata).
        var followedTypes: Set<EventType> = []
        /// A listen the server answered on the current connection covers its query.
        var synced = false
        /// What it was last told, to tell a change of metadata alone (`includeMetadataChanges`).
        var delivered = DeliveredMetadata()
    }

    /// A write sent (or to be sent) to the server, kept until it is answered.
    struct PendingWrite: Sendable {
        let action: ClientAction
        let completion: Completion
        /// The connection (``State/linkNumber``) it was last sent on.
        var sentOnLink: Int?
        /// What the write put at each location it wrote (absolute paths), resolved locally.
        var written: [Path: Node] = [:]
        let status: WriteStatus
    }

    /// Tells the app how a request ended: hands its callback to `callbacks`. Called under the lock,
    /// so that callbacks keep the order of events.
    typealias Completion = @Sendable (_ error: DatabaseError?, _ callbacks: CallbackExecutor) -> Void

    /// An onDisconnect request made while offline, sent once connected.
    struct QueuedRequest: Sendable {
        let action: ClientAction
        let completion: @Sendable (RequestOutcome) -> Void
    }

    /// A transaction queue's compare-and-set in flight, kept to be resent as it was (under the same
    /// write id, so the server applies it once) when its answer is lost with the connection.
    struct TransactionPut: Sendable {
        let action: ClientAction
        /// The write id it was sent under: that of the queue's last transaction.
        let sequence: Int
        let ids: [Int]
        /// The connection (``State/linkNumber``) it was last sent on.
        var sentOnLink: Int?
    }

    /// A listen the server should have: the query and the tag of a filtered one.
    struct ListenState: Sendable {
        let query: QuerySpec
        let tag: Int?
        /// The connection (``State/linkNumber``) on which the server answered it (its data or `ok`).
        var answeredOnLink: Int?
    }

    struct State: Sendable {
        var tree: SyncTree
        var info: SyncTree
        var callbacks: CallbackExecutor
        var observers: [Int: Observer] = [:]
        var nextHandle = 1
        var nextWriteID = 0
        var writes: [Int: PendingWrite] = [:]
        var listens: [String: ListenState] = [:]
        var listenOrder: [String] = []
        var queued: [QueuedRequest] = []
        /// onDisconnect writes this client registered, applied locally when the connection is lost.
        var localDisconnects: [(path: Path, json: JSONValue, isUpdate: Bool)] = []
        // Connection
        var link: (any ServerLink)?
        /// Counts connections, so that what was sent on the current one is known.
        var linkNumber = 0
        var auth = AuthSession()
        var connected = false
        var interrupted = false
        /// The last connection attempt failed, or the connection was lost: offline until one opens
        /// (`goOnline()` clears it, as its attempt starts at once).
        var lastAttemptFailed = false
        /// Why connecting fails when retrying alone will not help (a refused certificate).
        var connectionError: DatabaseError?
        var lastSessionID: String?
        /// Where the server's last `r` (reset) message, or the host its hello named, sent this
        /// client; dropped when it cannot be reached, so the configured server is tried again.
        var redirect: RealtimeEndpoint?
        var reconnectAtOnce = false
        /// The host of the current connection.
        var linkHost: String?
        /// The network path as the monitor last reported it (`nil` before its first report).
        var networkPath: NetworkPathStatus?
        /// The network path came back while disconnected: the next attempt goes at once and the
        /// backoff starts over.
        var networkPathReturned = false
        var serverTimeOffset: Double = 0
        var nextRequestNumber = 0
        var requests: [Int: @Sendable (RequestOutcome) -> Void] = [:]
        var reconnectWait: Task<Void, any Error>?
        var connectionWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var transactions: [Int: TransactionState] = [:]
        /// The compare-and-set in flight for each location with a transaction queue.
        var transactionPuts: [Path: TransactionPut] = [:]
        /// Locations whose transaction queue is being run (its update blocks are running).
        var transactionRuns: Set<Path> = []
        var nextTransactionID = 0
        /// `keepSynced(true)` queries and the observer that keeps each synced.
        var kept: [String: DatabaseHandle] = [:]
        /// Observers with `includeMetadataChanges`.
        var metadataObservers: Set<Int> = []
        /// What metadata depends on, when it was last checked for them.
        var metadataStamp: MetadataStamp?
        /// Counts changes of observers' ``Observer/synced``.
        var syncGeneration = 0
        /// `waitForPendingWrites()` calls and the writes each waits for.
        var writeWaiters: [UUID: WriteWaiter] = [:]
    }

    init(
        endpoint: RealtimeEndpoint, callbacks: CallbackExecutor, connector: @escaping Connector, logger: Logger,
        persistence: PersistenceManager? = nil, transactionBlocks: TransactionRegistry = TransactionRegistry(),
        followsHelloHost: Bool = true, reconnectBackoff: ReconnectBackoff = ReconnectBackoff(),
        networkPathMonitor: (any NetworkPathMonitor)? = nil
    ) {
        self.transactionBlocks = transactionBlocks
        self.reconnectBackoff = reconnectBackoff
        self.networkPathMonitor = networkPathMonitor
        self.endpoint = endpoint
        self.followsHelloHost = followsHelloHost
        self.logger = logger
        self.connector = connector
        self.persistence = persistence
        let requests = ListenRequests()
        listenRequests = requests
        var tree = SyncTree(listenProvider: requests)
        if let persistence {
            tree.persistedCache = { query in persistence.serverCache(for: query) }
            if let saved = persistence.setting("client_id") {
                clientID = saved
            } else {
                clientID = UUID().uuidString
                persistence.setSetting("client_id", clientID)
            }
        } else {
            clientID = UUID().uuidString
        }
        var initial = State(tree: tree, info: SyncTree(listenProvider: NoListens()), callbacks: callbacks)
        if let persistence {
            // The client id outlives a run, so each run numbers its writes from a range of its own:
            // a number the server saw in an earlier run (a write sent just before the app stopped,
            // not yet saved) is never reused for a different write.
            let run = (persistence.setting("run").flatMap { Int($0) } ?? 0) + 1
            persistence.setSetting("run", String(run))
            persistence.flush()
            initial.nextWriteID = run << Self.writeIDsPerRunShift
        }
        if let token = persistence?.setting(Self.authTokenSetting) {
            initial.auth.token = token
            initial.auth.state = .authenticating
        }
        state = Mutex(initial)
        if let persistence { restoreWrites(persistence.restoredWrites()) }
    }

    /// Each run of a persistent client numbers its writes from `run << 32` (2^32 writes a run).
    static let writeIDsPerRunShift = 32

    /// What `.info` holds: `connected` and `serverTimeOffset`.
    func infoNode(_ state: State) -> Node {
        Node(children: [
            (ChildKey("connected"), Node(.bool(state.connected))),
            (ChildKey("serverTimeOffset"), Node(.number(state.serverTimeOffset))),
        ])
    }

    static let connectedPath: Path = ".info/connected"
    static let offsetPath: Path = ".info/serverTimeOffset"
    /// What the SDK reports of itself once connected, as Firebase's SDKs do (`sdk.js.10-14-1`).
    static let sdkStats: JSONValue = .object(
        ["sdk.swift." + Database.sdkVersion().replacingOccurrences(of: ".", with: "-"): .number(1)])

    /// Starts connecting and watching the network path (once).
    func start() {
        loop.withLock { loop in
            guard loop == nil else { return }
            loop = (Task { [self] in await runConnection() }, Task { [self] in await watchNetworkPath() })
        }
    }

    /// Stops connecting for good (the database is released) and closes the device store once
    /// everything queued for it was written.
    func stop() {
        loop.withLock { loop in
            loop?.connection.cancel()
            loop?.networkPath.cancel()
        }
        state.withLock { state in
            state.link?.close()
            state.reconnectWait?.cancel()
        }
        persistence?.close()
    }

    // MARK: Time

    /// The server's clock as this client estimates it, in milliseconds since 1970.
    func serverTime(_ state: State) -> Double {
        (Date().timeIntervalSince1970 * 1000 + state.serverTimeOffset).rounded()
    }

    // MARK: Events

    /// Hands `events` to their listeners' callbacks, in order. Call under the lock.
    func dispatch(_ events: [Event], in state: inout State) {
        var toldChildren: [Int: Set<ChildKey>] = [:]
        for event in events {
            let id = event.registration.id
            guard let observer = state.observers[id] else { continue }
            switch event {
            case .cancel(_, _, let error):
                state.observers[id] = nil
                if let cancel = observer.cancel {
                    let failure = DatabaseError.server(status: error, message: "the listen was refused: \(error)")
                    state.callbacks.deliver(cancel, failure)
                }
            case .data(_, let path, let change):
                // The event's path is the query's for `value`, the child's for the others.
                let ref = observer.query.ref.database.reference(at: path)
                let snapshot = snapshot(for: observer, ref: ref, at: path, node: change.node, in: state)
                if observer.includeMetadataChanges {
                    if let name = change.childName {
                        toldChildren[id, default: []].insert(name)
                    } else {
                        state.observers[id]?.delivered.value = change.node
                        state.observers[id]?.delivered.metadata = snapshot.metadata
                    }
                    if observer.followedTypes.contains(change.type) { continue }
                }
                observer.callback.deliver(
                    snapshot, previousKey: change.type == .value ? nil : change.prevName?.string, to: state.callbacks)
                if observer.once { removeObserver(id, in: &state) }
            }
        }
        raiseMetadataChanges(toldChildren: toldChildren, in: &state)
    }

    // MARK: Listeners

    /// Adds a listener; its first events (from cached data) are delivered at once.
    func addObserver(
        query: DatabaseQuery, types: Set<EventType>, callback: Observer.Callback,
        cancel: (@isolated(any) @Sendable (any Error) -> Void)?, once: Bool, includeMetadataChanges: Bool = false
    ) -> DatabaseHandle {
        state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            let followed: Set<EventType> =
                includeMetadataChanges && types.contains(.childChanged) ? Set([.childAdded]).subtracting(types) : []
            let registration = EventRegistration(id: handle, types: types.union(followed))
            state.observers[handle] = Observer(
                query: query, registration: registration, callback: callback, cancel: cancel, once: once,
                includeMetadataChanges: includeMetadataChanges, followedTypes: followed)
            if includeMetadataChanges { state.metadataObservers.insert(handle) }
            let spec = query.spec
            let events: [Event]
            if spec.path.front == .info {
                // `.info` data lives in the repo; the new view learns it now.
                state.observers[handle]?.synced = true
                events =
                    state.info.addRegistration(registration, for: spec)
                    + state.info.applyServerOverwrite(infoNode(state), at: .root.child(.info))
            } else {
                events = state.tree.addRegistration(registration, for: spec)
                sendListenRequests(in: &state)
                let synced = isSynced(spec, in: state)
                state.observers[handle]?.synced = synced
            }
            if includeMetadataChanges { startTrackingMetadata(of: handle, in: &state) }
            dispatch(events, in: &state)
            return DatabaseHandle(handle)
        }
    }

    /// `keepSynced`: an observer with nothing to tell keeps the query's listen up.
    func keepSynced(_ query: DatabaseQuery, _ keep: Bool) {
        let key = Self.listenKey(query.spec)
        if keep {
            guard state.withLock({ $0.kept[key] == nil }) else { return }
            let handle = addObserver(query: query, types: [.value], callback: .none, cancel: nil, once: false)
            state.withLock { $0.kept[key] = handle }
        } else if let handle = state.withLock({ $0.kept.removeValue(forKey: key) }) {
            removeObserver(handle)
        }
    }

    func removeObserver(_ handle: DatabaseHandle) {
        state.withLock { state in removeObserver(Int(handle), in: &state) }
    }

    /// Removes every listener of `query`'s location and parameters (all of a location's for a
    /// reference).
    func removeAllObservers(of query: DatabaseQuery) {
        state.withLock { state in
            let spec = query.spec
            for (id, observer) in state.observers where observer.query.spec == spec {
                removeObserver(id, in: &state)
            }
        }
    }

    private func removeObserver(_ id: Int, in state: inout State) {
        guard let observer = state.observers.removeValue(forKey: id) else { return }
        state.metadataObservers.remove(id)
        let spec = observer.query.spec
        if spec.path.front == .info {
            _ = state.info.removeRegistration(observer.registration, for: spec)
        } else {
            _ = state.tree.removeRegistration(observer.registration, for: spec)
            sendListenRequests(in: &state)
        }
    }

    /// Turns the listens the sync tree asked for into requests (or remembers them until connected).
    func sendListenRequests(in state: inout State) {
        for request in listenRequests.take() {
            switch request {
            case .start(let query, let tag):
                persistence?.setActive(query)
                let key = Self.listenKey(query)
                if state.listens[key] == nil { state.listenOrder.append(key) }
                state.listens[key] = ListenState(query: query, tag: tag)
                if state.connected { sendListen(key, in: &state) }
            case .stop(let query, let tag):
                persistence?.setInactive(query)
                let key = Self.listenKey(query)
                guard state.listens.removeValue(forKey: key) != nil else { continue }
                state.listenOrder.removeAll { $0 == key }
                send(.unlisten(path: query.path.wireString, query: query.params.wireObject, tag: tag), in: &state) {
                    _ in
                }
            }
        }
    }

    static func listenKey(_ query: QuerySpec) -> String { query.path.wireString + "|" + query.params.queryIdentifier }

    func sendListen(_ key: String, in state: inout State) {
        guard let listen = state.listens[key] else { return }
        let query = listen.query
        let hash = state.tree.serverCacheHash(for: query)
        let action = ClientAction.listen(
            path: query.path.wireString, query: query.params.wireObject, tag: listen.tag, hash: hash)
        send(action, in: &state) { [self] outcome in
            // A listen cut off by a lost connection is sent again on the next one.
            guard case .answered(let status, let data) = outcome else { return }
            self.state.withLock { state in
                if status != .ok {
                    logger.warning("listen refused", metadata: ["path": "\(query.path)", "status": "\(status)"])
                }
                if case .array(let warnings)? = data["w"], warnings.contains(.string("no_index")) {
                    logger.warning(
                        "using an unindexed query; add .indexOn to the rules for better performance",
                        metadata: ["path": "\(query.path)"])
                }
                guard state.listens[key] != nil else { return }
                if status == .ok {
                    persistence?.setComplete(query, window: state.tree.serverCache(for: query))
                    listenAnswered(key, in: &state)
                }
                if status != .ok {
                    state.listens[key] = nil
                    state.listenOrder.removeAll { $0 == key }
                }
                let events = state.tree.listenCompleted(query, status: status.text)
                sendListenRequests(in: &state)
                dispatch(events, in: &state)
            }
        }
    }

    // MARK: Requests

    /// Sends `action` now if connected (returns false otherwise, and `answer` never runs). `answer`
    /// runs outside the lock with the status and data of the server's answer, or `disconnected`
    /// when the connection ends first. A write goes with its `writeID` when the server takes write
    /// ids; writes must be sent in the order of their ids (see ``WriteID``).
    @discardableResult
    func send(
        _ action: ClientAction, writeID: Int? = nil, in state: inout State,
        answer: @escaping @Sendable (RequestOutcome) -> Void
    ) -> Bool {
        // After `goOffline()` nothing more goes out, even while the connection is still closing.
        guard let link = state.link, state.connected, !state.interrupted else { return false }
        let number = state.nextRequestNumber
        state.nextRequestNumber += 1
        let id = writeID.flatMap { link.hello.supportsWriteIDs ? WriteID(client: clientID, sequence: $0) : nil }
        guard link.send(.request(ClientRequest(number: number, action: action, writeID: id))) else { return false }
        state.requests[number] = answer
        return true
    }
}
