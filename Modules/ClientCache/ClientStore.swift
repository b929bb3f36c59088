public import Persistence
public import Tree

/// What the Swift client SDK keeps on the device when persistence is on: the data the server sent
/// (its server cache), the writes not yet acknowledged, the queries it tracks, and a few settings
/// (the auth token, the client's id).
///
/// ``SQLiteClientStore`` keeps them in one SQLite file per database. Calls block their thread until
/// the store is done; the SDK makes them from its own serial queue.
public protocol ClientStore: Sendable {
    // MARK: Server cache

    /// The cached server data at `path`: what ancestors' rows hold there, with the rows below it
    /// laid over. Reads only the rows at, above and below `path`.
    func serverCache(at path: Path) throws(StoreError) -> Node

    /// Replaces the cached data at `path` with `node` (``Node/empty`` records that there is none).
    func overwriteServerCache(_ node: Node, at path: Path) throws(StoreError)

    /// Replaces the cached data at each `path.child(relative)` with its node.
    func mergeServerCache(_ children: [Path: Node], at path: Path) throws(StoreError)

    /// Forgets the cached data at `path` except the subtrees at `keeping` (absolute paths at or
    /// below `path`). Costs what it removes and keeps, not the size of the cache.
    func pruneServerCache(at path: Path, keeping: [Path]) throws(StoreError)

    // MARK: Writes

    /// Stores `write` durably (it survives a crash or power loss once this returns).
    func saveWrite(_ write: PersistedWrite) throws(StoreError)

    /// Forgets write `id` (acknowledged or reverted).
    func removeWrite(id: Int) throws(StoreError)

    /// Forgets every write.
    func removeAllWrites() throws(StoreError)

    /// The stored writes, in id order.
    func writes() throws(StoreError) -> [PersistedWrite]

    // MARK: Transactions

    /// Stores a named transaction (or its new put) durably.
    func saveTransaction(_ transaction: PersistedTransaction) throws(StoreError)

    /// Stores the put each of `ids` was sent in, durably, before it is sent.
    func saveTransactionPut(_ put: PersistedTransaction.Put, ids: [Int]) throws(StoreError)

    /// Forgets transaction `id` (it finished).
    func removeTransaction(id: Int) throws(StoreError)

    /// The stored transactions, in id order.
    func transactions() throws(StoreError) -> [PersistedTransaction]

    // MARK: Tracked queries

    /// Every tracked query.
    func trackedQueries() throws(StoreError) -> [TrackedQuery]

    /// The tracked queries at `location` and above it (an indexed lookup: what a new listener
    /// needs before every tracked query is loaded).
    func trackedQueries(atOrAbove location: Path) throws(StoreError) -> [TrackedQuery]

    /// The tracked queries one level below `location`.
    func trackedQueries(childrenOf location: Path) throws(StoreError) -> [TrackedQuery]

    /// The tracked queries strictly below `location`.
    func trackedQueries(below location: Path) throws(StoreError) -> [TrackedQuery]

    /// The tracked query for `queryIdentifier` at `location`, if any.
    func trackedQuery(at location: Path, queryIdentifier: String) throws(StoreError) -> TrackedQuery?

    /// An id no tracked query has.
    func nextTrackedQueryID() throws(StoreError) -> Int

    /// Marks every tracked query inactive (at start-up: nothing listens yet). Costs the queries
    /// that were active.
    func deactivateTrackedQueries() throws(StoreError)

    /// Inserts or replaces the tracked query with `query.id`.
    func saveTrackedQuery(_ query: TrackedQuery) throws(StoreError)

    /// Forgets tracked query `id` and its keys.
    func deleteTrackedQuery(id: Int) throws(StoreError)

    /// The child keys the filtered tracked query `id` holds.
    func trackedKeys(queryID: Int) throws(StoreError) -> Set<String>

    /// Replaces the child keys the filtered tracked query `id` holds.
    func setTrackedKeys(_ keys: Set<String>, queryID: Int) throws(StoreError)

    // MARK: Settings and size

    /// The setting `name` (for example `"auth"`), or `nil`.
    func setting(_ name: String) throws(StoreError) -> String?

    /// Stores the setting `name`; `nil` removes it.
    func setSetting(_ name: String, _ value: String?) throws(StoreError)

    /// The bytes the cached server data and the pending writes take, kept up to date as they
    /// change (no scan).
    var size: ClientStoreSize { get }

    /// The bytes of cached data at and below `paths`, as ``size`` counts them (a location below
    /// two of them is counted once). Costs the rows it counts.
    func cachedBytes(under paths: [Path]) throws(StoreError) -> Int

    // MARK: Space on disk

    /// The bytes the store's files take on disk now.
    var bytesOnDisk: Int { get }

    /// Gives the space that removals freed back to the file system, and empties the journal, so
    /// that the files take about what the store holds. Costs the space freed since the last call.
    func reclaimSpace() throws(StoreError)

    /// Closes the store now, even while a call on another thread still holds it (that call and
    /// later ones fail): another store may open the same file as soon as this returns.
    func close()
}

extension ClientStore {
    public func close() {}
}

/// How much a ``ClientStore`` holds, in bytes of stored paths and JSON.
public struct ClientStoreSize: Sendable, Equatable, CustomStringConvertible {
    /// Cached server data.
    public var serverCache: Int
    /// Writes not yet acknowledged (never evicted).
    public var pendingWrites: Int

    public init(serverCache: Int, pendingWrites: Int) {
        self.serverCache = serverCache
        self.pendingWrites = pendingWrites
    }

    public var total: Int { serverCache + pendingWrites }

    public var description: String {
        "\(total) bytes (\(serverCache) cached, \(pendingWrites) in pending writes)"
    }
}

/// A write the client has not seen acknowledged: a set or an update at ``path`` with the JSON the
/// app gave (server values unresolved), as it goes to the server.
public struct PersistedWrite: Sendable, Equatable {
    /// The client's write id; writes are sent in id order.
    public var id: Int
    public var path: Path
    /// Whether ``json`` is a multi-path update (an object of relative paths and values).
    public var isMerge: Bool
    public var json: JSONValue

    public init(id: Int, path: Path, isMerge: Bool, json: JSONValue) {
        self.id = id
        self.path = path
        self.isMerge = isMerge
        self.json = json
    }
}

/// A query whose data the client keeps: where, which query, when it was last used, whether the
/// server confirmed its data (`complete`) and whether a listener or `keepSynced` holds it (`active`).
public struct TrackedQuery: Sendable, Equatable {
    public var id: Int
    public var path: Path
    /// The query's identifier (`"default"` for a query that loads all data at its path).
    public var queryIdentifier: String
    /// The query's parameters as the wire's query object (`{}` for the default query).
    public var params: JSONValue
    /// Milliseconds since 1970.
    public var lastUse: Double
    public var isComplete: Bool
    public var isActive: Bool

    public init(
        id: Int, path: Path, queryIdentifier: String, params: JSONValue, lastUse: Double, isComplete: Bool,
        isActive: Bool
    ) {
        self.id = id
        self.path = path
        self.queryIdentifier = queryIdentifier
        self.params = params
        self.lastUse = lastUse
        self.isComplete = isComplete
        self.isActive = isActive
    }
}

/// A transaction run by the name its update block is registered under, kept until it finishes so
/// that it runs again in the next run if the app stops first.
public struct PersistedTransaction: Sendable, Equatable {
    /// The compare-and-set a transaction was last sent in: resent as it was after a restart.
    public struct Put: Sendable, Equatable {
        /// The write id (sequence) it was sent under.
        public var writeID: Int
        /// The data it writes and the hash of the data it expects.
        public var value: JSONValue
        public var hash: String

        public init(writeID: Int, value: JSONValue, hash: String) {
            self.writeID = writeID
            self.value = value
            self.hash = hash
        }
    }

    public var id: Int
    public var path: Path
    /// The name its update block is registered under.
    public var name: String
    /// The argument the block is given (`null` for none).
    public var argument: JSONValue
    public var applyLocally: Bool
    public var put: Put?

    public init(id: Int, path: Path, name: String, argument: JSONValue = .null, applyLocally: Bool, put: Put? = nil) {
        self.id = id
        self.path = path
        self.name = name
        self.argument = argument
        self.applyLocally = applyLocally
        self.put = put
    }
}
