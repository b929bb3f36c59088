import Foundation
import Logging
import Presence
import Prometheus
import Query
import Transport
import Tree

extension CanopyServer {
    /// Handles one assembled realtime message of `connection`.
    func handle(_ text: String, on connection: RealtimeConnection, database: Database) async {
        let message: ClientMessage
        do {
            message = try ClientMessage(json: try JSONValue(parsing: text))
        } catch let error as ProtocolError {
            if case .invalidRequest(let number, let reason) = error {
                connection.send(.response(number: number, status: "invalid_request", data: .string(reason)))
            } else {
                connection.send(.error("\(error)"))
            }
            return
        } catch {
            connection.send(.error("malformed message: \(error)"))
            return
        }
        switch message {
        case .ping: connection.send(.pong)
        case .pong, .control: break
        case .request(let request): await handle(request, on: connection, database: database)
        }
    }

    private func handle(_ request: ClientRequest, on connection: RealtimeConnection, database: Database) async {
        let number = request.number
        let answer: @Sendable (WriteOutcome) -> Void = { outcome in
            switch outcome {
            case .ok: connection.send(.ok(number))
            case .datastale:
                connection.send(.response(number: number, status: "datastale", data: "Transaction hash does not match"))
            case .rejected(let error):
                connection.send(.response(number: number, status: error.status, data: .string(error.message)))
            }
        }
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
        case .put(let text, let data, let hash):
            guard let path = path(text) else { return }
            await database.set(path, json: data, expectedHash: hash, reply: answer)
        case .merge(let text, let data):
            guard let path = path(text) else { return }
            await database.update(path, json: data, reply: answer)
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
        do {
            _ = try Node(json: json, at: path, serverValues: ServerValueContext(now: 0))
            return nil
        } catch {
            return .invalidData(error.description)
        }
    }
}
