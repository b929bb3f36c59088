import Dispatch
public import Foundation
import Logging
import Query
import Synchronization
import Transport
import Tree

/// A location in the database (Firebase's `DatabaseReference`): read it, write it, listen to it.
///
/// Writes raise local events at once and complete when the server answered: with a block, or
/// with the `async throws` forms, which return once the server acknowledged the write.
///
/// ```swift
/// let ada = Database.database().reference(withPath: "users/ada")
/// try await ada.setValue(["name": "Ada", "score": 36])
/// try await ada.updateChildValues(["score": 37, "badges/first": true])
/// ada.child("online").onDisconnectSetValue(false)
/// ```
public final class DatabaseReference: DatabaseQuery, @unchecked Sendable {
    init(database: Database, path: Path, problem: DatabaseError?) {
        super.init(database: database, path: path, params: .default, problem: problem)
    }

    /// The last key of the location; `nil` at the root.
    public var key: String? { path.back?.string }

    /// The location above; `nil` at the root.
    public var parent: DatabaseReference? {
        path.parent.map { DatabaseReference(database: database, path: $0, problem: problem) }
    }

    /// The root of the database.
    public var root: DatabaseReference { DatabaseReference(database: database, path: .root, problem: problem) }

    /// The location's URL.
    public var url: String {
        let base = database.url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? database.url
        let query = database.url.split(separator: "?", maxSplits: 1).dropFirst().first.map { "?" + $0 } ?? ""
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        return trimmed + "/" + path.wireString + query
    }

    /// The location at `pathString` below this one (keys separated by slashes).
    public func child(_ pathString: String) -> DatabaseReference {
        guard problem == nil else { return self }
        do {
            return DatabaseReference(
                database: database, path: path.child(try Path(validating: pathString)), problem: nil)
        } catch {
            return DatabaseReference(database: database, path: path, problem: Repo.databaseError(error, at: path))
        }
    }

    /// A new child with a push id: unique, and sorted by creation time.
    public func childByAutoId() -> DatabaseReference {
        let now =
            Int64(Date().timeIntervalSince1970 * 1000)
            + Int64(
                database.repo.map { repo in
                    repo.state.withLock { $0.serverTimeOffset }
                } ?? 0)
        return DatabaseReference(
            database: database, path: path.child(ChildKey(Self.pushIDs.next(now: now))), problem: problem)
    }

    private static let pushIDs = PushIDGenerator()

    // MARK: Writes

    /// Replaces the data here with `value` (`nil` removes it).
    @discardableResult
    public func setValue(_ value: Any?) -> WriteStatus { setValue(value, withCompletionBlock: { _, _ in }) }

    /// ``setValue(_:)->WriteStatus``, then `block` with the server's answer.
    @discardableResult
    public func setValue(
        _ value: Any?,
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        write(reply(block)) { repo, status, done throws(DatabaseError) in
            repo.set(try AppValue.json(value, at: self.location), at: self.path, status: status, completion: done)
        }
    }

    /// Replaces the data here and returns (this reference) once the server acknowledged it.
    @discardableResult
    public func setValue(_ value: Any?) async throws -> DatabaseReference {
        try await awaitWrite { self.setValue(value, withCompletionBlock: $0) }
    }

    /// Replaces the data and its priority. (Disfavoured, as the other two-argument forms with a
    /// priority, so that a trailing completion block with typed parameters, `{ (error: Error?, ref:
    /// DatabaseReference) in … }`, is not taken for the priority.)
    @_disfavoredOverload
    @discardableResult
    public func setValue(_ value: Any?, andPriority priority: Any?) -> WriteStatus {
        setValue(value, andPriority: priority, withCompletionBlock: { _, _ in })
    }

    @discardableResult
    public func setValue(
        _ value: Any?, andPriority priority: Any?,
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        write(reply(block)) { repo, status, done throws(DatabaseError) in
            repo.set(try self.withPriority(value, priority), at: self.path, status: status, completion: done)
        }
    }

    @_disfavoredOverload
    @discardableResult
    public func setValue(_ value: Any?, andPriority priority: Any?) async throws -> DatabaseReference {
        try await awaitWrite { self.setValue(value, andPriority: priority, withCompletionBlock: $0) }
    }

    /// Writes an `Encodable` value (Firebase's `setValue(from:encoder:completion:)`); see
    /// ``Database/Encoder`` for the strategies. `completion` gets the server's answer. Throws
    /// ``DatabaseError/invalidValue(_:reason:)`` when `value` does not encode, and writes nothing.
    ///
    /// ```swift
    /// try ref.setValue(from: Post(title: "Hello")) { error in print(error ?? "saved") }
    /// ```
    public func setValue<T: Encodable>(
        from value: T, encoder: Database.Encoder = Database.Encoder(),
        @_inheritActorContext completion: (@isolated(any) @Sendable ((any Error)?) -> Void)? = nil
    ) throws {
        let json: JSONValue
        do {
            json = try encoder.json(value)
        } catch {
            throw DatabaseError.invalidValue(location, reason: "\(T.self) does not encode to JSON: \(error)")
        }
        write(json, completion: completion)
    }

    /// Writes an `Encodable` value encoded by a `JSONEncoder`.
    public func setValue<T: Encodable>(from value: T, encoder: JSONEncoder) throws {
        try setValue(from: value, encoder: encoder, completion: nil)
    }

    public func setValue<T: Encodable>(
        from value: T, encoder: JSONEncoder,
        @_inheritActorContext completion: (@isolated(any) @Sendable ((any Error)?) -> Void)?
    ) throws {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: encoder.encode(value))
        } catch {
            throw DatabaseError.invalidValue(location, reason: "\(T.self) does not encode to JSON: \(error)")
        }
        write(json, completion: completion)
    }

    private func write(_ json: JSONValue, completion: (@isolated(any) @Sendable ((any Error)?) -> Void)?) {
        _ = write({ error, callbacks in if let completion { callbacks.deliver(completion, error) } }) {
            repo, status, done throws(DatabaseError) in
            repo.set(json, at: self.path, status: status, completion: done)
        }
    }

    /// Sets only the priority.
    @discardableResult
    public func setPriority(_ priority: Any?) -> WriteStatus {
        setPriority(priority, withCompletionBlock: { _, _ in })
    }

    @discardableResult
    public func setPriority(
        _ priority: Any?,
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        write(reply(block)) { repo, status, done throws(DatabaseError) in
            repo.set(
                try AppValue.json(priority, at: self.location + "/.priority"), at: self.path.child(.priority),
                status: status, completion: done)
        }
    }

    @discardableResult
    public func setPriority(_ priority: Any?) async throws -> DatabaseReference {
        try await awaitWrite { self.setPriority(priority, withCompletionBlock: $0) }
    }

    /// Writes several locations at once: each key is a path relative to this one (`"a/b": 1`);
    /// `nil` or `NSNull` removes. All of it applies, or none.
    @discardableResult
    public func updateChildValues(_ values: [AnyHashable: Any]) -> WriteStatus {
        updateChildValues(values, withCompletionBlock: { _, _ in })
    }

    @discardableResult
    public func updateChildValues(
        _ values: [AnyHashable: Any],
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        write(reply(block)) { repo, status, done throws(DatabaseError) in
            repo.update(try self.members(values), at: self.path, status: status, completion: done)
        }
    }

    @discardableResult
    public func updateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        try await awaitWrite { self.updateChildValues(values, withCompletionBlock: $0) }
    }

    /// Removes the data here.
    @discardableResult
    public func removeValue() -> WriteStatus { setValue(nil) }

    /// ``removeValue()->WriteStatus``, then `block` with the server's answer.
    @discardableResult
    public func removeValue(
        @_inheritActorContext completionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        setValue(nil, withCompletionBlock: block)
    }

    /// ``removeValue(completionBlock:)`` under an earlier name. (Disfavoured, so that a trailing
    /// block picks one.)
    @_disfavoredOverload
    @discardableResult
    public func removeValue(
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> WriteStatus {
        setValue(nil, withCompletionBlock: block)
    }

    /// Removes the data here and returns (this reference) once the server acknowledged it.
    @discardableResult
    public func removeValue() async throws -> DatabaseReference { try await setValue(nil) }

    // MARK: onDisconnect

    /// Writes `value` here when this client's connection ends (the server does it).
    public func onDisconnectSetValue(_ value: Any?) { onDisconnectSetValue(value, withCompletionBlock: { _, _ in }) }

    public func onDisconnectSetValue(
        _ value: Any?,
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        disconnect(reply(block)) { () throws(DatabaseError) in
            .onDisconnectPut(path: self.path.wireString, data: try AppValue.json(value, at: self.location))
        }
    }

    /// Registers ``onDisconnectSetValue(_:)`` and returns (this reference) once the server has it.
    @discardableResult
    public func onDisconnectSetValue(_ value: Any?) async throws -> DatabaseReference {
        try await awaitWrite { self.onDisconnectSetValue(value, withCompletionBlock: $0) }
    }

    @_disfavoredOverload
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) {
        onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: { _, _ in })
    }

    public func onDisconnectSetValue(
        _ value: Any?, andPriority priority: Any?,
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        disconnect(reply(block)) { () throws(DatabaseError) in
            .onDisconnectPut(path: self.path.wireString, data: try self.withPriority(value, priority))
        }
    }

    @_disfavoredOverload
    @discardableResult
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) async throws -> DatabaseReference {
        try await awaitWrite { self.onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: $0) }
    }

    /// Updates the children named by `values` (relative paths) when the connection ends.
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) {
        onDisconnectUpdateChildValues(values, withCompletionBlock: { _, _ in })
    }

    public func onDisconnectUpdateChildValues(
        _ values: [AnyHashable: Any],
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        disconnect(reply(block)) { () throws(DatabaseError) in
            .onDisconnectMerge(path: self.path.wireString, data: .object(try self.members(values)))
        }
    }

    @discardableResult
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        try await awaitWrite { self.onDisconnectUpdateChildValues(values, withCompletionBlock: $0) }
    }

    /// Removes the data here when the connection ends.
    public func onDisconnectRemoveValue() { onDisconnectSetValue(nil) }

    /// ``onDisconnectRemoveValue()->()``, then `block` with the server's answer.
    public func onDisconnectRemoveValue(
        @_inheritActorContext completionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        onDisconnectSetValue(nil, withCompletionBlock: block)
    }

    /// ``onDisconnectRemoveValue(completionBlock:)`` under an earlier name.
    @_disfavoredOverload
    public func onDisconnectRemoveValue(
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        onDisconnectSetValue(nil, withCompletionBlock: block)
    }

    @discardableResult
    public func onDisconnectRemoveValue() async throws -> DatabaseReference { try await onDisconnectSetValue(nil) }

    /// Cancels the onDisconnect operations at and below this location.
    public func cancelDisconnectOperations() { cancelDisconnectOperations(completionBlock: { _, _ in }) }

    /// ``cancelDisconnectOperations()->()``, then `block` with the server's answer.
    public func cancelDisconnectOperations(
        @_inheritActorContext completionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        disconnect(reply(block)) { () throws(DatabaseError) in .onDisconnectCancel(path: self.path.wireString) }
    }

    /// ``cancelDisconnectOperations(completionBlock:)`` under an earlier name.
    @_disfavoredOverload
    public func cancelDisconnectOperations(
        @_inheritActorContext withCompletionBlock block:
            @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) {
        cancelDisconnectOperations(completionBlock: block)
    }

    @discardableResult
    public func cancelDisconnectOperations() async throws -> DatabaseReference {
        try await awaitWrite { self.cancelDisconnectOperations(completionBlock: $0) }
    }

    // MARK: Transactions

    /// Runs `block` on the current data and writes its result atomically: if the server's data
    /// differed, `block` runs again on the fresh data (up to 25 times). `completion` gets the error
    /// (if any), whether the write committed, and the final data.
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        @_inheritActorContext andCompletionBlock completion:
            @escaping @isolated(any) @Sendable ((any Error)?, Bool, DataSnapshot?) -> Void = { _, _, _ in },
        withLocalEvents localEvents: Bool = true
    ) {
        guard let repo = database.repo, problem == nil else {
            database.callbacks.deliver(completion, usableError, false, nil)
            return
        }
        repo.runTransaction(at: self, update: block, completion: completion, applyLocally: localEvents)
    }

    /// Runs the transaction whose update block is registered as `name` (see
    /// ``Database/registerTransaction(named:_:)``), giving it `argument` (a value `setValue` takes).
    /// With persistence on it is kept on the device until it finishes, and runs again after a
    /// restart if the app stopped first (the completion is then not called: the app that asked is
    /// gone).
    public func runTransaction(
        named name: String, argument: Any? = nil,
        @_inheritActorContext andCompletionBlock completion:
            @escaping @isolated(any) @Sendable ((any Error)?, Bool, DataSnapshot?) -> Void = { _, _, _ in },
        withLocalEvents localEvents: Bool = true
    ) {
        let json: JSONValue
        do {
            json = try AppValue.json(argument, at: location)
        } catch {
            database.callbacks.deliver(completion, error, false, nil)
            return
        }
        guard let repo = database.repo, problem == nil else {
            database.callbacks.deliver(completion, usableError, false, nil)
            return
        }
        repo.runTransaction(at: self, named: name, argument: json, completion: completion, applyLocally: localEvents)
    }

    /// ``runTransactionBlock(_:andCompletionBlock:withLocalEvents:)`` that returns the committed data
    /// (or throws; an aborted transaction throws ``DatabaseError/transactionAborted``). Use the form
    /// returning `(committed, snapshot)` to learn of an abort without an error.
    @discardableResult
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult, withLocalEvents localEvents: Bool = true
    ) async throws -> DataSnapshot {
        let (committed, snapshot) = try await runTransactionBlock(block, withLocalEvents: localEvents)
        guard committed else { throw DatabaseError.transactionAborted }
        return snapshot
    }

    /// ``runTransactionBlock(_:andCompletionBlock:withLocalEvents:)`` that returns whether the
    /// transaction committed and the data it ended with, as Firebase's does: an aborted transaction
    /// returns `committed` false, it does not throw. (Disfavoured: an unannotated result is the
    /// committed ``DataSnapshot``; destructuring picks this form.)
    ///
    /// ```swift
    /// let (committed, snapshot) = try await likes.runTransactionBlock { data in
    ///     data.value = (data.value as? Int ?? 0) + 1
    ///     return .success(withValue: data)
    /// }
    /// ```
    @_disfavoredOverload
    @discardableResult
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult, withLocalEvents localEvents: Bool = true
    ) async throws -> (Bool, DataSnapshot) {
        try await withCheckedThrowingContinuation { continuation in
            runTransactionBlock(
                block,
                andCompletionBlock: { error, committed, snapshot in
                    if let error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: (committed, snapshot ?? DataSnapshot(ref: self, node: .empty)))
                    }
                }, withLocalEvents: localEvents)
        }
    }

    // MARK: Connection

    /// Disconnects every database ``Database/database(url:)`` made and keeps them offline until
    /// ``goOnline()`` (Firebase's class method; ``Database/goOffline()`` does it for one).
    public static func goOffline() {
        for database in Database.everyInstance { database.goOffline() }
    }

    /// Reconnects every database ``Database/database(url:)`` made, after ``goOffline()``.
    public static func goOnline() {
        for database in Database.everyInstance { database.goOnline() }
    }

    // MARK: Support

    var location: String { "/" + path.wireString }

    private func withPriority(_ value: Any?, _ priority: Any?) throws(DatabaseError) -> JSONValue {
        let json = try AppValue.json(value, at: location)
        let priorityJSON = try AppValue.json(priority, at: location + "/.priority")
        if priorityJSON == .null { return json }
        switch json {
        case .object(var members) where members[".value"] == nil:
            members[".priority"] = priorityJSON
            return .object(members)
        case .null: return .null
        default: return [".value": json, ".priority": priorityJSON]
        }
    }

    private func members(_ values: [AnyHashable: Any]) throws(DatabaseError) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for (key, value) in values {
            guard let name = key.base as? String else {
                throw .invalidValue(location, reason: "an update key is \(type(of: key.base)), not a String path")
            }
            members[name] = try AppValue.json(value, at: location + "/" + name)
        }
        return members
    }

    /// Hands a write's outcome to the app's `block`.
    private func reply(
        _ block: @escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void
    ) -> Repo.Completion {
        { error, callbacks in callbacks.deliver(block, error, self) }
    }

    /// Runs a write through the repo, reporting a problem found before sending to `done`.
    private func write(
        _ done: @escaping Repo.Completion,
        _ body: (Repo, WriteStatus, @escaping Repo.Completion) throws(DatabaseError) -> Void
    ) -> WriteStatus {
        let status = WriteStatus(path: location)
        guard problem == nil, let repo = database.repo else {
            let error = usableError
            database.logger.error("\(error)")
            status.finish(error)
            done(error, database.callbacks)
            return status
        }
        do {
            try body(repo, status, done)
        } catch {
            database.logger.error("\(error)")
            status.finish(error)
            done(error, database.callbacks)
        }
        return status
    }

    private func disconnect(_ done: @escaping Repo.Completion, _ action: () throws(DatabaseError) -> ClientAction) {
        // An onDisconnect operation is not a write of the client's: its status is not kept.
        _ = write(done) { repo, _, done throws(DatabaseError) in
            let action = try action()
            switch action {
            case .onDisconnectPut(_, let data):
                _ = try repo.state.withLock { state throws(DatabaseError) in
                    try repo.node(data, at: self.path, in: state)
                }
            case .onDisconnectMerge(_, .object(let members)):
                for (key, value) in members {
                    let child: Path
                    do throws(TreeError) {
                        child = self.path.child(try Path(validating: key))
                    } catch {
                        throw Repo.databaseError(error, at: self.path)
                    }
                    _ = try repo.state.withLock { state throws(DatabaseError) in
                        try repo.node(value, at: child, in: state)
                    }
                }
            default:
                break
            }
            repo.onDisconnect(action, completion: done)
        }
    }

    private func awaitWrite(
        _ start: (@escaping @isolated(any) @Sendable ((any Error)?, DatabaseReference) -> Void) -> Void
    ) async throws -> DatabaseReference {
        try await withCheckedThrowingContinuation { continuation in
            start { error, ref in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: ref) }
            }
        }
    }
}

extension DatabaseReference: CustomStringConvertible {
    public var description: String { url }
}
