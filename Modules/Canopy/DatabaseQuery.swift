import Dispatch
import Foundation
import Logging
import Query
import SyncEngine
import Synchronization
import Tree

/// A location with an ordering, a range and a limit (Firebase's `DatabaseQuery`). Builders return
/// new queries; a query the database cannot run (two orderings, a limit set twice, a bad key)
/// reports ``DatabaseError/invalidQuery(_:)`` when it is observed or read, and nothing is sent.
///
/// ```swift
/// let top = Database.database().reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 4)
/// top.observe(.childAdded) { snapshot in print(snapshot.key) }
/// ```
///
/// Every stored property is an immutable `Sendable` value, so queries can be shared across tasks.
public class DatabaseQuery: @unchecked Sendable {
    /// The database this location belongs to.
    public let database: Database
    let path: Path
    let params: QueryParams
    /// Why this query or reference cannot be used, if it cannot.
    let problem: DatabaseError?

    init(database: Database, path: Path, params: QueryParams, problem: DatabaseError?) {
        self.database = database
        self.path = path
        self.params = params
        self.problem = problem
    }

    /// The location this query reads.
    public var ref: DatabaseReference { DatabaseReference(database: database, path: path, problem: problem) }

    var spec: QuerySpec { QuerySpec(path: path, params: params) }

    private func with(_ build: (QueryParams) throws -> QueryParams) -> DatabaseQuery {
        guard problem == nil else { return self }
        do {
            return DatabaseQuery(database: database, path: path, params: try build(params), problem: nil)
        } catch {
            return DatabaseQuery(
                database: database, path: path, params: params, problem: .invalidQuery("\(error)"))
        }
    }

    private func bound(_ value: Any?, key: String?) throws -> (Node, ChildKey?) {
        let json = try AppValue.json(value, at: "/" + path.wireString)
        let node = try Node(json: json)
        if let key, let reason = ChildKey.problem(with: key) {
            throw DatabaseError.invalidQuery("child key \"\(key)\" \(reason)")
        }
        return (node, key.map { ChildKey($0) })
    }

    // MARK: Ordering

    public func queryOrdered(byChild key: String) -> DatabaseQuery {
        with { params in
            let child = try Path(validating: key)
            guard !child.isEmpty else { throw DatabaseError.invalidQuery("queryOrdered(byChild:) needs a child path") }
            return try params.ordered(by: .child(child))
        }
    }

    public func queryOrderedByKey() -> DatabaseQuery { with { try $0.ordered(by: .key) } }

    public func queryOrderedByValue() -> DatabaseQuery { with { try $0.ordered(by: .value) } }

    public func queryOrderedByPriority() -> DatabaseQuery { with { try $0.ordered(by: .priority) } }

    // MARK: Limits and ranges

    public func queryLimited(toFirst limit: UInt) -> DatabaseQuery { with { try $0.limited(toFirst: Int(limit)) } }

    public func queryLimited(toLast limit: UInt) -> DatabaseQuery { with { try $0.limited(toLast: Int(limit)) } }

    public func queryStarting(atValue value: Any?) -> DatabaseQuery { queryStarting(atValue: value, childKey: nil) }

    public func queryStarting(atValue value: Any?, childKey: String?) -> DatabaseQuery {
        with { params in
            let (node, key) = try bound(value, key: childKey)
            return try params.starting(at: node, key: key)
        }
    }

    public func queryStarting(afterValue value: Any?) -> DatabaseQuery {
        queryStarting(afterValue: value, childKey: nil)
    }

    public func queryStarting(afterValue value: Any?, childKey: String?) -> DatabaseQuery {
        with { params in
            let (node, key) = try bound(value, key: childKey)
            return try params.starting(after: node, key: key)
        }
    }

    public func queryEnding(atValue value: Any?) -> DatabaseQuery { queryEnding(atValue: value, childKey: nil) }

    public func queryEnding(atValue value: Any?, childKey: String?) -> DatabaseQuery {
        with { params in
            let (node, key) = try bound(value, key: childKey)
            return try params.ending(at: node, key: key)
        }
    }

    public func queryEnding(beforeValue value: Any?) -> DatabaseQuery { queryEnding(beforeValue: value, childKey: nil) }

    public func queryEnding(beforeValue value: Any?, childKey: String?) -> DatabaseQuery {
        with { params in
            let (node, key) = try bound(value, key: childKey)
            return try params.ending(before: node, key: key)
        }
    }

    public func queryEqual(toValue value: Any?) -> DatabaseQuery { queryEqual(toValue: value, childKey: nil) }

    public func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        with { params in
            let (node, key) = try bound(value, key: childKey)
            return try params.equal(to: node, key: key)
        }
    }

    // MARK: Listening

    /// Calls `block` with the data every time it changes (`.value`), or with each child event.
    /// Returns the handle for ``removeObserver(withHandle:)``. Like every block the SDK calls
    /// back, `block` runs on the main actor when written there (in a `@MainActor` class), else on
    /// ``Database/callbackQueue``.
    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        @_inheritActorContext with block: @escaping @isolated(any) @Sendable (DataSnapshot) -> Void
    ) -> DatabaseHandle {
        observe(eventType, with: block, withCancel: nil)
    }

    /// ``observe(_:with:)`` with a block told when the listen is refused or the query is invalid;
    /// the listener is removed then.
    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        @_inheritActorContext with block: @escaping @isolated(any) @Sendable (DataSnapshot) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        add(eventType, .snapshot(block), cancel: cancelBlock, once: false)
    }

    /// Child events with the key of the child before this one in the query's order.
    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        @_inheritActorContext andPreviousSiblingKeyWith block:
            @escaping @isolated(any) @Sendable (DataSnapshot, String?) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)? = nil
    ) -> DatabaseHandle {
        add(eventType, .snapshotAndPreviousKey(block), cancel: cancelBlock, once: false)
    }

    /// Calls `block` once, with the first event, then stops listening.
    public func observeSingleEvent(
        of eventType: DataEventType,
        @_inheritActorContext with block: @escaping @isolated(any) @Sendable (DataSnapshot) -> Void
    ) {
        observeSingleEvent(of: eventType, with: block, withCancel: nil)
    }

    public func observeSingleEvent(
        of eventType: DataEventType,
        @_inheritActorContext with block: @escaping @isolated(any) @Sendable (DataSnapshot) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)?
    ) {
        _ = add(eventType, .snapshot(block), cancel: cancelBlock, once: true)
    }

    /// Calls `block` once, with the first event and the key of the child before it in the
    /// query's order, then stops listening.
    public func observeSingleEvent(
        of eventType: DataEventType,
        @_inheritActorContext andPreviousSiblingKeyWith block:
            @escaping @isolated(any) @Sendable (DataSnapshot, String?) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)? = nil
    ) {
        _ = add(eventType, .snapshotAndPreviousKey(block), cancel: cancelBlock, once: true)
    }

    /// The first event, as ``observeSingleEvent(of:with:)`` gives it.
    ///
    /// Like Firebase's, this form cannot report a refused listen or an invalid query: the refusal is
    /// logged and the call returns only when its task is cancelled, with an empty snapshot of this
    /// location. Use ``getData()``, or the form with a cancel block, where refusals matter.
    public func observeSingleEvent(of eventType: DataEventType) async -> DataSnapshot {
        await observeSingleEventAndPreviousSiblingKey(of: eventType).0
    }

    /// The first event and the key of the child before it in the query's order (`nil` for the
    /// first child and for `.value`); see ``observeSingleEvent(of:)`` for a refused listen.
    public func observeSingleEventAndPreviousSiblingKey(of eventType: DataEventType) async -> (DataSnapshot, String?) {
        let wait = SingleEventWait()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard wait.start(continuation) else { return }
                let handle = add(
                    eventType, .snapshotAndPreviousKey { snapshot, previous in wait.end(with: (snapshot, previous)) },
                    cancel: { [database] error in database.logger.error("observeSingleEvent: \(error)") }, once: true)
                wait.setStop { [self] in removeObserver(withHandle: handle) }
            }
        } onCancel: {
            wait.end(with: (DataSnapshot(ref: ref, node: .empty), nil))
        }
    }

    func add(
        _ eventType: DataEventType, _ callback: Repo.Observer.Callback,
        cancel: (@isolated(any) @Sendable (any Error) -> Void)?, once: Bool, includeMetadataChanges: Bool = false
    ) -> DatabaseHandle {
        guard let repo = usableRepo(cancel) else { return 0 }
        return repo.addObserver(
            query: self, types: [eventType.eventType], callback: callback, cancel: cancel, once: once,
            includeMetadataChanges: includeMetadataChanges)
    }

    /// The repo, or `nil` after telling `cancel` why this query is unusable.
    func usableRepo(_ cancel: (@isolated(any) @Sendable (any Error) -> Void)?) -> Repo? {
        let failure: DatabaseError
        if let problem {
            failure = problem
        } else {
            switch database.endpoint {
            case .failure(let error): failure = error
            case .success:
                if let repo = database.repo { return repo }
                failure = .invalidPath(database.url, reason: "not a database URL")
            }
        }
        database.logger.error("\(failure)")
        if let cancel { database.callbacks.deliver(cancel, failure) }
        return nil
    }

    /// Stops the listener `handle`.
    public func removeObserver(withHandle handle: DatabaseHandle) { database.repo?.removeObserver(handle) }

    /// Stops every listener of this query (of this location, for a reference).
    public func removeAllObservers() { database.repo?.removeAllObservers(of: self) }

    /// Keeps this query's data synced with no listener attached (`true`), or stops (`false`).
    public func keepSynced(_ keepSynced: Bool) {
        guard let repo = usableRepo(nil) else { return }
        repo.keepSynced(self, keepSynced)
    }

    // MARK: One-shot reads

    /// The data from the server when connected; offline, what the device holds for the query (in
    /// memory, or on disk from an earlier run) if it holds all of it, else
    /// ``DatabaseError/offline(_:)``. Same as ``getData(source:)`` with ``DataSource/default``.
    public func getData() async throws -> DataSnapshot { try await getData(source: .default) }

    /// The data from `source`: the server, the device, or the server with the device as fallback
    /// when offline (see ``DataSource``). A connection attempt under way is waited for (up to 3 s);
    /// known to be offline, it answers at once.
    ///
    /// ```swift
    /// let snapshot = try await ref.getData(source: .cache)   // never touches the network
    /// ```
    public func getData(source: DataSource) async throws -> DataSnapshot {
        if let problem { throw problem }
        guard let repo = database.repo else { throw usableError }
        return try await repo.get(self, source: source)
    }

    /// ``getData()`` with a completion block.
    public func getData(
        @_inheritActorContext completion: @escaping @isolated(any) @Sendable ((any Error)?, DataSnapshot?) -> Void
    ) {
        getData(source: .default, completion: completion)
    }

    /// ``getData(source:)`` with a completion block.
    public func getData(
        source: DataSource,
        @_inheritActorContext completion: @escaping @isolated(any) @Sendable ((any Error)?, DataSnapshot?) -> Void
    ) {
        Task {
            do {
                let snapshot = try await getData(source: source)
                database.callbacks.deliver(completion, nil, snapshot)
            } catch {
                database.callbacks.deliver(completion, error, nil)
            }
        }
    }

    var usableError: DatabaseError {
        if let problem { return problem }
        if case .failure(let error) = database.endpoint { return error }
        return .invalidPath(database.url, reason: "not a database URL")
    }
}
