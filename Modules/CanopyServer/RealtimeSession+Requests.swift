import Logging
import NIOWebSocket
import Prometheus
import Query
import Transport
import Tree

/// The session's requests: each message parsed, dispatched and answered, in arrival order.
extension RealtimeSession {
    /// Handles assembled messages, in order.
    ///
    /// Consecutive writes (puts and merges) go to the database in one step, so a client that
    /// pipelines many writes pays for one hop to the database's executor, not one per write.
    func handle(_ texts: [String], database: Database) async {
        var writes: [DatabaseWrite] = []
        writes.reserveCapacity(texts.count)
        for text in texts {
            guard !isRetired, let message = parse(text) else { continue }
            guard case .request(let request) = message else {
                if case .ping = message { connection.send(.pong) }
                continue
            }
            if let write = write(for: request) {
                writes.append(write)
                continue
            }
            if !writes.isEmpty {
                await database.perform(writes)
                writes.removeAll(keepingCapacity: true)
            }
            await handle(request, database: database)
        }
        if !writes.isEmpty { await database.perform(writes) }
    }

    private func parse(_ text: String) -> ClientMessage? {
        do throws(ProtocolError) {
            return try ClientMessage(parsing: text)
        } catch .invalidRequest(let number, let reason) {
            connection.send(.response(number: number, status: .invalidRequest, data: .string(reason)))
        } catch {
            connection.send(.error("\(error)"))
        }
        return nil
    }

    /// The answer to request `number` once its write is durable or refused (or once it was
    /// handled, for other requests: `.ok` carries no data then).
    static func answer(_ number: Int, on connection: RealtimeConnection) -> @Sendable (WriteOutcome) -> Void {
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

    private func handle(_ request: ClientRequest, database: Database) async {
        let number = request.number
        let fail = { (error: WriteError) in Self.answer(number, on: self.connection)(.rejected(error)) }
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
            await listen(at: path, query: query, tag: tag, hash: hash, request: number, database: database)
        case .unlisten(let text, let query, _):
            guard let path = path(text) else { return }
            let queryID = (try? QueryParams(wireObject: query))?.queryIdentifier ?? "default"
            await database.unlisten(subscriberID: subscriberID, path: path, queryID: queryID)
            connection.send(.ok(number))
        case .put, .merge:
            // Batched by `handle(_:database:)` through `write(for:)`.
            if let write = write(for: request) { await database.perform([write]) }
        case .onDisconnectPut, .onDisconnectMerge:
            switch Self.disconnectOperation(for: request.action) {
            case .success(let operation)?:
                await registerDisconnect(operation, request: number, database: database)
            case .failure(let error)?: fail(error)
            case nil: break
            }
        case .onDisconnectCancel(let text):
            guard let path = path(text) else { return }
            await cancelDisconnect(below: path, request: number, database: database)
        case .get(let text, let query):
            guard let path = path(text) else { return }
            do {
                let params = try QueryParams(wireObject: query)
                guard let data = await database.read(path, params: params, caller: caller) else {
                    return fail(.permissionDenied)
                }
                connection.send(.ok(number, data: data.json(exportFormat: true)))
            } catch {
                fail(WriteError(status: .invalidQuery, message: error.description))
            }
        case .auth(let credential):
            await authenticate(credential: credential, admin: nil, request: number, database: database)
        case .adminAuth(let credential, let authVariable):
            await authenticate(
                credential: credential, admin: AdminAuth(authVariable: authVariable), request: number,
                database: database)
        case .unauth:
            await setCaller(.unauthenticated, expiresAt: nil, database: database)
            connection.send(.ok(number))
        case .stats(let stats):
            // Firebase's SDKs and Canopy's send `{"sdk.js.10-14-1": 1}`; earlier builds of Canopy's Swift SDK
            // nested it in a `c`, which is still read.
            let counters = stats["c"]?.objectValue ?? stats.objectValue
            if let sdk = counters?.keys.first(where: { $0.hasPrefix("sdk.") }) { reportSDK(sdk) }
            connection.send(.ok(number))
        case .unknown(let action):
            connection.send(
                .response(number: number, status: .unknownAction, data: .string("unknown action \"\(action)\"")))
        }
    }

    /// `q`: registers the listen and pushes its data, then answers (in commit order; see
    /// ``Database/listen(_:path:params:queryID:tag:hash:caller:reply:)``), with `no_index` when
    /// the query's index is not declared.
    private func listen(
        at path: Path, query: JSONValue?, tag: Int?, hash: String?, request number: Int, database: Database
    ) async {
        let connection = connection
        let fail = { (error: WriteError) in Self.answer(number, on: connection)(.rejected(error)) }
        let params: QueryParams
        do {
            params = try QueryParams(wireObject: query)
        } catch {
            return fail(WriteError(status: .invalidQuery, message: error.description))
        }
        let limit = context.limits.maxListensPerConnection
        if await database.wouldExceedListens(
            of: subscriberID, path: path, queryID: params.queryIdentifier, limit: limit)
        {
            context.metrics.tripped(.listensPerConnection)
            return fail(WriteError(status: .tooManyListens, message: "this connection already has \(limit) listens"))
        }
        let allowed = await database.listen(
            connection, path: path, params: params, queryID: params.queryIdentifier, tag: tag, hash: hash,
            caller: caller
        ) { warnings in
            connection.send(.ok(number, data: warnings.isEmpty ? [:] : ["w": .array(warnings.map { .string($0) })]))
        }
        if !allowed { fail(.permissionDenied) }
    }
}
