import Foundation
import Logging
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
            connection.send(.response(number: number, status: "invalid_request", data: .string(reason)))
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
                connection.send(.response(number: number, status: "datastale", data: "Transaction hash does not match"))
            case .rejected(let error):
                connection.send(.response(number: number, status: error.status, data: .string(error.message)))
            }
        }
    }

    /// A put or merge as a step for ``Database/perform(_:)``; `nil` for other requests. A put or
    /// merge at an invalid path is answered here and becomes a step that does nothing.
    private static func write(for request: ClientRequest, on connection: RealtimeConnection) -> DatabaseWrite? {
        let answer = answer(request.number, on: connection)
        let path: (String) -> Path? = { text in
            do throws(TreeError) {
                return try Path(validating: text)
            } catch {
                answer(.rejected(.invalidPath(error)))
                return nil
            }
        }
        switch request.action {
        case .put(let text, let data, let hash):
            guard let path = path(text) else { return { _ in } }
            return { database in database.set(path, json: data, expectedHash: hash, reply: answer) }
        case .merge(let text, let data):
            guard let path = path(text) else { return { _ in } }
            return { database in database.update(path, json: data, reply: answer) }
        default:
            return nil
        }
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
                fail(WriteError(status: "invalid_query", message: error.description))
                return
            }
            let listen = await database.listen(
                connection, path: path, params: params, queryID: params.queryIdentifier, tag: tag, hash: hash)
            if let push = listen.push { connection.deliver(push) }
            let warnings: JSONValue = listen.warnings.isEmpty ? [:] : ["w": .array(listen.warnings.map { .string($0) })]
            connection.send(.ok(number, data: warnings))
        case .unlisten(let text, let query, _):
            guard let path = path(text) else { return }
            let queryID = (try? QueryParams(wireObject: query))?.queryIdentifier ?? "default"
            await database.unlisten(subscriberID: connection.subscriberID, path: path, queryID: queryID)
            connection.send(.ok(number))
        case .put, .merge:
            // Batched by `handle(_:on:database:)` through `write(for:on:)`.
            if let write = Self.write(for: request, on: connection) { await database.perform([write]) }
        case .onDisconnectPut(let text, let data):
            guard let path = path(text) else { return }
            if let problem = Self.validateDisconnectValue(data, at: path) { return fail(problem) }
            _ = connection.register(DisconnectOperation(path: path, kind: .set(data)))
            connection.send(.ok(number))
        case .onDisconnectMerge(let text, let data):
            guard let path = path(text) else { return }
            guard case .object(let members) = data else {
                return fail(.invalidData("an onDisconnect update must be an object of paths and values"))
            }
            for (key, value) in members {
                do {
                    let child = path.child(try Path(validating: key))
                    if let problem = Self.validateDisconnectValue(value, at: child) { return fail(problem) }
                } catch {
                    return fail(.invalidPath(error))
                }
            }
            _ = connection.register(DisconnectOperation(path: path, kind: .update(members)))
            connection.send(.ok(number))
        case .onDisconnectCancel(let text):
            guard let path = path(text) else { return }
            connection.cancelDisconnect(below: path)
            connection.send(.ok(number))
        case .get(let text, let query):
            guard let path = path(text) else { return }
            do {
                let params = try QueryParams(wireObject: query)
                let data = await database.read(path, params: params)
                connection.send(.ok(number, data: data.json(exportFormat: true)))
            } catch {
                fail(WriteError(status: "invalid_query", message: error.description))
            }
        case .auth, .unauth, .stats:
            connection.send(.ok(number))
        case .unknown(let action):
            connection.send(
                .response(number: number, status: "unknown_action", data: .string("unknown action \"\(action)\"")))
        }
    }

    /// Checks an onDisconnect value when it is registered (server values resolve when it runs).
    static func validateDisconnectValue(_ json: JSONValue, at path: Path) -> WriteError? {
        if let refusal = Database.refuseInfoWrite(path) { return refusal }
        do {
            _ = try Node(json: json, at: path, serverValues: ServerValueContext(now: 0))
            return nil
        } catch {
            return .invalidData(error.description)
        }
    }
}
