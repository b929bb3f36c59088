public import Synchronization
public import Tree

/// One connection's onDisconnect operations and the identity they run as, from their registration
/// until they run, once.
///
/// Operations are registered and cancelled as the connection's requests come. Where the
/// connection's ``DisconnectDatabase`` keeps records (a store several processes share), each change
/// is stored before it returns, so that another process runs the operations if this one dies; a
/// change the store refuses is undone. When the connection ends, or a newer connection of the same
/// client takes its place, ``run(on:)`` takes the operations with the identity they run as and
/// hands them to the database: whoever asks first runs them, every caller returns once they were
/// handed over, and nothing is registered or stored afterwards.
///
/// ```swift
/// let presence = ConnectionPresence(session: id, identity: Caller.unauthenticated)
/// try await presence.register(offline, limit: 10_000, on: database)
/// presence.identify(as: .admin)
/// await presence.keep(on: database)    // the stored record names the new identity
/// await presence.run(on: database)     // at close: runs them, once
/// ```
public final class ConnectionPresence<Identity: DisconnectIdentity>: Sendable {
    /// The session the operations belong to; their record is kept under it.
    public let session: String
    // Inlinable, with the accessors read on every request, so that a client module reads them
    // specialized for its identity type instead of instantiating generic metadata per call.
    @usableFromInline let state: Mutex<State>
    /// The handing over of the operations, once started.
    private let handover = Mutex<Task<Void, Never>?>(nil)

    @usableFromInline struct State {
        @usableFromInline var identity: Identity
        /// Counts identity changes, so that a change meant for an earlier identity does nothing.
        @usableFromInline var identification = 0
        @usableFromInline var operations = DisconnectOperations()
        /// Set once the operations were taken to run.
        @usableFromInline var retired = false

        @usableFromInline init(identity: Identity) { self.identity = identity }
    }

    public init(session: String, identity: Identity) {
        self.session = session
        state = Mutex(State(identity: identity))
    }

    /// Who the connection acts as now.
    @inlinable public var identity: Identity { state.withLock { $0.identity } }

    /// The operations registered now.
    public var operations: DisconnectOperations { state.withLock { $0.operations } }

    /// Whether the operations were taken to run: nothing is registered any more.
    @inlinable public var isRetired: Bool { state.withLock { $0.retired } }

    /// The operations registered now and the identity they run as, read together; `nil` once they
    /// were taken to run.
    public var record: DisconnectRecord<Identity>? {
        state.withLock { state in
            state.retired ? nil : DisconnectRecord(operations: state.operations.operations, identity: state.identity)
        }
    }

    // MARK: Identity

    /// Acts as `identity` from now on; returns a number naming this change (see
    /// ``replace(_:with:)``). Call ``keep(on:)`` afterwards, so that a stored record names it.
    @discardableResult
    public func identify(as identity: Identity) -> Int {
        state.withLock { state in
            state.identity = identity
            state.identification += 1
            return state.identification
        }
    }

    /// Acts as `identity` in place of what change `identification` set, unless another change came
    /// after it or the operations were taken to run; returns whether it did. (A credential's
    /// expiry must not undo a newer credential.)
    public func replace(_ identification: Int, with identity: Identity) -> Bool {
        state.withLock { state in
            guard state.identification == identification, !state.retired else { return false }
            state.identity = identity
            state.identification += 1
            return true
        }
    }

    /// Whether change `identification` is the last one and the operations were not taken to run.
    public func isCurrent(_ identification: Int) -> Bool {
        state.withLock { $0.identification == identification && !$0.retired }
    }

    // MARK: Operations

    /// Adds `operation` (it runs after every operation registered before it) unless the operations
    /// would then hold more than `limit` bytes; where `database` keeps records, stores the change
    /// before returning. Once the operations were taken to run, adds nothing and returns.
    public func register(
        _ operation: DisconnectOperation, limit: Int, on database: some DisconnectDatabase<Identity>
    ) async throws(DisconnectRefusal) {
        let previous = try state.withLock { state throws(DisconnectRefusal) -> DisconnectOperations? in
            guard !state.retired else { return nil }
            guard state.operations.byteCount + operation.byteCount <= limit else { throw .tooBig(limit: limit) }
            let previous = state.operations
            state.operations.register(operation)
            return previous
        }
        guard let previous else { return }
        try await keep(changedFrom: previous, on: database)
    }

    /// Removes every operation at or below `path`; where `database` keeps records, stores the
    /// change before returning.
    public func cancel(below path: Path, on database: some DisconnectDatabase<Identity>) async throws(DisconnectRefusal)
    {
        let previous = state.withLock { state in
            let previous = state.operations
            state.operations.cancel(below: path)
            return previous
        }
        try await keep(changedFrom: previous, on: database)
    }

    /// Where `database` keeps records, stores the operations again with the identity the
    /// connection has now: they run as whoever the connection is when it ends, on whichever
    /// process. A refusal leaves the stored record as it was (the database reports it).
    public func keep(on database: some DisconnectDatabase<Identity>) async {
        guard database.keepsDisconnectRecords, !operations.isEmpty else { return }
        _ = await database.keep(session: session) { [self] in record }
    }

    /// Stores a change from `previous`; if the store refuses, puts `previous` back (unless the
    /// operations were taken to run meanwhile).
    ///
    /// The record is read when the database submits it, so changes of one connection are stored
    /// in order, each with what the connection holds then: a registration and an identity change
    /// racing to store cannot leave the earlier one as the last stored, and one arriving after
    /// the operations ran stores nothing.
    private func keep(
        changedFrom previous: DisconnectOperations, on database: some DisconnectDatabase<Identity>
    ) async throws(DisconnectRefusal) {
        guard database.keepsDisconnectRecords, operations.operations != previous.operations else { return }
        guard let error = await database.keep(session: session, current: { [self] in record }) else { return }
        state.withLock { state in
            if !state.retired { state.operations = previous }
        }
        throw .notStored(error)
    }

    // MARK: Running

    /// Runs the operations on `database`, once, whoever asks first: the connection's end, or a
    /// newer connection of the same client taking its place. Every caller returns once they were
    /// handed over.
    public func run(on database: some DisconnectDatabase<Identity>) async {
        let task = handover.withLock { handover in
            if let handover { return handover }
            let started = Task { [self] in
                guard let record = retire(), !record.operations.isEmpty else { return }
                await database.run(record, session: session)
            }
            handover = started
            return started
        }
        await task.value
    }

    /// Takes the operations to run, at most once, with the identity they run as (read together,
    /// so that an identity change racing the end cannot come between them).
    private func retire() -> DisconnectRecord<Identity>? {
        state.withLock { state in
            guard !state.retired else { return nil }
            state.retired = true
            return DisconnectRecord(operations: state.operations.takeAll(), identity: state.identity)
        }
    }
}
