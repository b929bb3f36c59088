import Foundation
import Logging
import NIOWebSocket
import Presence
import Prometheus
import Query
import Transport
import Tree

extension CanopyServer {
    /// Handles assembled realtime messages of `connection`, in order.
    ///
    /// Consecutive writes (puts and merges) go to the database in one step, so a connection that
    /// pipelines many writes pays for one hop to the database's executor, not one per write.
    func handle(_ texts: [String], on connection: RealtimeConnection, database: Database) async {
        var writes: [DatabaseWrite] = []
        for text in texts {
            guard !connection.isRetired, let message = parse(text, on: connection) else { continue }
            guard case .request(let request) = message else {
                if case .ping = message { connection.send(.pong) }
                continue
            }
            if let write = Self.write(for: request, on: connection) {
                writes.append(write)
                continue
            }
            if !writes.isEmpty {
                await database.perform(writes)
                writes.removeAll(keepingCapacity: true)
            }
            await handle(request, on: connection, database: database)
        }
        if !writes.isEmpty { await database.perform(writes) }
    }

    private func parse(_ text: String, on connection: RealtimeConnection) -> ClientMessage? {
        do throws(ProtocolError) {
            return try ClientMessage(parsing: text)
        } catch .invalidRequest(let number, let reason) {
            connection.send(.response(number: number, status: .invalidRequest, data: .string(reason)))
        } catch {
            connection.send(.error("\(error)"))
        }
        return nil
    }

    /// The answer to request `number` once its write is durable or refused.
    private static func answer(_ number: Int, on connection: RealtimeConnection) -> @Sendable (WriteOutcome) -> Void {
        { outcome in
            switch outcome {
            case .ok: connection.send(.ok(number))
            case .datastale:
                connection.send(.response(number: number, status: .dataStale, data: "Transaction hash does not match"))
            case .rejected(let error) where error.isMoved:
                // Not stored here: unanswered, the client sends it again after it reconnected, to
                // the namespace's new owner (with its write id, so it runs there once).
                connection.closeAfterPendingMessages(code: .goingAway)
            case .rejected(let error):
                connection.send(.response(number: number, status: error.status, data: .string(error.message)))
            }
        }
    }

    /// A put or merge as a step for ``Database/perform(_:)``; `nil` for other requests.
    private static func write(for request: ClientRequest, on connection: RealtimeConnection) -> DatabaseWrite? {
        write(
            for: request.action, writeID: request.writeID, as: connection.caller,
            answer: answer(request.number, on: connection))
    }

    /// A put or merge as a step for ``Database/perform(_:)`` that hands its outcome to `answer`;
    /// `nil` for other actions. A put or merge at an invalid path becomes a step that refuses it. A write named by `writeID` that already ran is answered as it was
    /// then, not run again (see ``AppliedWrites``).
    static func write(
        for action: ClientAction, writeID: WriteID? = nil, as caller: Caller,
        answer: @escaping @Sendable (WriteOutcome) -> Void
    ) -> DatabaseWrite? {
        switch action {
        case .put(let text, let data, let hash):
            let path: Path
            do throws(TreeError) {
                path = try Path(validating: text)
            } catch {
                return refusal(.invalidPath(error), answer: answer)
            }
            return { database in
                database.once(writeID, at: path, reply: answer) { reply in
                    database.set(path, json: data, expectedHash: hash, as: caller, reply: reply)
                }
            }
        case .merge(let text, let data):
            let path: Path
            do throws(TreeError) {
                path = try Path(validating: text)
            } catch {
                return refusal(.invalidPath(error), answer: answer)
            }
            return { database in
                database.once(writeID, at: path, reply: answer) { reply in
                    database.update(path, json: data, as: caller, reply: reply)
                }
            }
        default:
            return nil
        }
    }

    /// A step that answers `error`, in commit order like every write's answer.
    private static func refusal(
        _ error: WriteError, answer: @escaping @Sendable (WriteOutcome) -> Void
    ) -> DatabaseWrite {
        { database in database.inCommitOrder { answer(.rejected(error)) } }
    }

    private func handle(_ request: ClientRequest, on connection: RealtimeConnection, database: Database) async {
        let number = request.number
        let answer = Self.answer(number, on: connection)
        func fail(_ error: WriteError) { answer(.rejected(error)) }
        func path(_ text: String) -> Path? {
            do {
                return try Path(validating: text)
            } catch {
                fail(.invalidPath(error))
                return nil
            }
        }
        switch request.action {
        case .listen(let text, let query, let tag, let hash):
            guard let path = path(text) else { return }
            let params: QueryParams
            do {
                params = try QueryParams(wireObject: query)
            } catch {
                fail(WriteError(status: .invalidQuery, message: error.description))
                return
            }
            let limit = configuration.maxListensPerConnection
            if await database.wouldExceedListens(
                of: connection.subscriberID, path: path, queryID: params.queryIdentifier, limit: limit)
            {
                metrics.tripped(.listensPerConnection)
                return fail(
                    WriteError(status: .tooManyListens, message: "this connection already has \(limit) listens"))
            }
            // Answered once its data was pushed (in commit order; see `Database.listen`).
            let allowed = await database.listen(
                connection, path: path, params: params, queryID: params.queryIdentifier, tag: tag, hash: hash,
                caller: connection.caller
            ) { warnings in
                connection.send(.ok(number, data: warnings.isEmpty ? [:] : ["w": .array(warnings.map { .string($0) })]))
            }
            if !allowed { fail(.permissionDenied) }
        case .unlisten(let text, let query, _):
            guard let path = path(text) else { return }
            let queryID = (try? QueryParams(wireObject: query))?.queryIdentifier ?? "default"
            await database.unlisten(subscriberID: connection.subscriberID, path: path, queryID: queryID)
            connection.send(.ok(number))
        case .put, .merge:
            // Batched by `handle(_:on:database:)` through `write(for:on:)`.
            if let write = Self.write(for: request, on: connection) { await database.perform([write]) }
        case .onDisconnectPut, .onDisconnectMerge:
            switch Self.disconnectOperation(for: request.action) {
            case .success(let operation)?:
                // Checked now as a write made now would be, and again when it runs.
                guard await database.mayRegister(operation, as: connection.caller) else {
                    return fail(.permissionDenied)
                }
                do {
                    try await connection.presence.register(
                        operation, limit: configuration.maxOnDisconnectBytes, on: database)
                } catch {
                    return fail(refusal(error))
                }
                connection.send(.ok(number))
            case .failure(let error)?: fail(error)
            case nil: break
            }
        case .onDisconnectCancel(let text):
            guard let path = path(text) else { return }
            do {
                try await connection.presence.cancel(below: path, on: database)
            } catch {
                return fail(refusal(error))
            }
            connection.send(.ok(number))
        case .get(let text, let query):
            guard let path = path(text) else { return }
            do {
                let params = try QueryParams(wireObject: query)
                guard let data = await database.read(path, params: params, caller: connection.caller) else {
                    return fail(.permissionDenied)
                }
                connection.send(.ok(number, data: data.json(exportFormat: true)))
            } catch {
                fail(WriteError(status: .invalidQuery, message: error.description))
            }
        case .auth(let credential):
            await authenticate(connection, credential: credential, admin: nil, request: number, database: database)
        case .adminAuth(let credential, let authVariable):
            await authenticate(
                connection, credential: credential, admin: AdminAuth(authVariable: authVariable), request: number,
                database: database)
        case .unauth:
            await connection.setCaller(.unauthenticated, expiresAt: nil, database: database)
            connection.send(.ok(number))
        case .stats:
            connection.send(.ok(number))
        case .unknown(let action):
            connection.send(
                .response(number: number, status: .unknownAction, data: .string("unknown action \"\(action)\"")))
        }
    }

    /// What a client is told when a change to its onDisconnect operations was refused.
    private func refusal(_ error: DisconnectRefusal) -> WriteError {
        switch error {
        case .tooBig(let limit):
            metrics.tripped(.onDisconnectBytes)
            return WriteError(
                status: .tooBig,
                message: "the onDisconnect operations of this connection would hold more than \(limit) bytes")
        case .notStored:
            return WriteError(
                status: .storageError, message: "the onDisconnect operations could not be stored; try again")
        }
    }

    /// The onDisconnect operation an `o` or `om` action registers, or why it is refused; `nil` for
    /// other actions. Values are checked as a write there would be (server values resolve when it
    /// runs; here they only have to be well formed).
    static func disconnectOperation(for action: ClientAction) -> Result<DisconnectOperation, WriteError>? {
        let context = ServerValueContext(now: 0)
        do throws(TreeError) {
            switch action {
            case .onDisconnectPut(let text, let data):
                let path = try Path(validating: text)
                _ = try Node(json: data, at: path, serverValues: context)
                return .success(DisconnectOperation(path: path, kind: .set(data)))
            case .onDisconnectMerge(let text, let data):
                let path = try Path(validating: text)
                guard case .object(let members) = data else {
                    return .failure(.invalidData("an onDisconnect update must be an object of paths and values"))
                }
                _ = try Database.updateChildren(members, at: path) { absolute, value throws(TreeError) in
                    try Node(json: value, at: absolute, serverValues: context)
                }
                return .success(DisconnectOperation(path: path, kind: .update(members)))
            default:
                return nil
            }
        } catch {
            return .failure(.refused(error))
        }
    }
}
