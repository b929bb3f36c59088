import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus
import Query
import Tree

extension CanopyServer {
    /// Answers one REST request (`GET|HEAD|PUT|PATCH|POST|DELETE /path.json`, `/health`, `/metrics`,
    /// and CORS preflights), every answer readable by a browser page of any origin.
    func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
        metrics.restRequests.increment()
        var response = try await answer(request)
        Self.allowCrossOrigin(&response.headers)
        return response
    }

    private func answer(_ request: Request) async throws -> Response {
        if request.method == .options { return Self.preflight(request) }
        switch request.uri.path {
        case "/health", "/metrics":
            guard request.method == .get || request.method == .head else {
                return Self.methodNotAllowed(request.method, allowed: "GET, HEAD, OPTIONS")
            }
            guard request.uri.path == "/metrics" else {
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(
                status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        default: break
        }
        let rest: RESTRequest
        do {
            rest = try RESTRequest(path: request.uri.path, query: request.uri.query)
        } catch .notJSONPath {
            return Self.error(.notFound, "Not found: REST paths end in .json (for example /users/ada.json)")
        } catch .invalidPath(let reason) {
            return Self.error(.badRequest, "Invalid path: \(reason)")
        }
        let namespace = rest.namespace(host: request.head.authority, default: configuration.defaultNamespace)
        let database: Database
        do {
            database = try await databases.database(namespace)
        } catch .invalidName(let name) {
            return Self.error(.badRequest, "Invalid namespace \"\(name)\"")
        } catch .unknown(let name) {
            return Self.error(.notFound, "Namespace \"\(name)\" does not exist")
        } catch .storage(let reason) {
            return Self.error(.internalServerError, "Storage error: \(reason)")
        }
        if rest.isRulesDocument { return try await rules(request, rest: rest, database: database) }
        var body = request
        switch request.method {
        case .get:
            if request.headers[.accept]?.contains("text/event-stream") == true {
                return await eventStream(rest, database: database)
            }
            return await read(rest, request: request, database: database)
        case .head:
            // The answer to a GET; NIO's encoder leaves out the body and keeps its length.
            return await read(rest, request: request, database: database)
        case .put, .patch, .post:
            let json: JSONValue
            do {
                json = try await Self.jsonBody(of: &body, limit: configuration.maxMessageBytes)
            } catch let refusal {
                return refusal.response
            }
            return await write(request.method, json: json, rest: rest, request: request, database: database)
        case .delete:
            return await write(.delete, json: .null, rest: rest, request: request, database: database)
        default:
            return Self.methodNotAllowed(request.method, allowed: HTTPRefusal.dataMethods)
        }
    }

    /// Why a request body could not be read as JSON.
    enum BodyRefusal: Error {
        case tooLarge(limit: Int)
        case malformed(any Error)
        case notJSON

        var response: Response {
            switch self {
            case .tooLarge(let limit): CanopyServer.error(.contentTooLarge, "Request body exceeds \(limit) bytes")
            case .malformed(let error): CanopyServer.error(.badRequest, "Malformed request body: \(error)")
            case .notJSON:
                CanopyServer.error(.badRequest, "Invalid data; couldn't parse JSON object, array, or value.")
            }
        }
    }

    /// The request's body parsed as JSON.
    private static func jsonBody(of request: inout Request, limit: Int) async throws(BodyRefusal) -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw .tooLarge(limit: limit)
        } catch {
            // A chunked body the decoder could not parse, for example (HTTPErrorHandler has
            // already answered; this answer is for any other failure to read).
            throw .malformed(error)
        }
        do {
            return try JSONValue(parsing: Data(buffer.readableBytesView))
        } catch {
            throw .notJSON
        }
    }

    private func read(_ rest: RESTRequest, request: Request, database: Database) async -> Response {
        let params: QueryParams
        do {
            params = try QueryParams(restParameters: rest.parameters)
        } catch {
            return Self.error(.badRequest, error.description)
        }
        let node = await database.read(rest.path, params: params)
        let etag = Self.etag(node)
        if let expected = request.headers[.ifNoneMatch], expected == etag {
            var headers = HTTPFields()
            headers[.eTag] = etag
            return Response(status: .notModified, headers: headers)
        }
        var value: JSONValue
        if rest.parameters["shallow"] == "true" {
            value =
                node.isLeaf || node.isEmpty
                ? node.json()
                : .object(Dictionary(uniqueKeysWithValues: node.children.map { ($0.key.string, JSONValue.bool(true)) }))
        } else {
            value = node.json(exportFormat: rest.parameters["format"] == "export")
        }
        if !params.loadsAllData, case .array(let elements) = value {
            value = .object(
                Dictionary(
                    uniqueKeysWithValues: elements.enumerated().compactMap {
                        $0.element == .null ? nil : (String($0.offset), $0.element)
                    }))
        }
        var headers = HTTPFields()
        if request.headers[HTTPField.Name("X-Firebase-ETag")!] == "true" || request.headers[.ifNoneMatch] != nil {
            headers[.eTag] = etag
        }
        return Self.json(value, status: .ok, headers: headers, rest: rest)
    }

    private func write(
        _ method: HTTPRequest.Method, json: JSONValue, rest: RESTRequest, request: Request, database: Database
    ) async -> Response {
        let ifMatch = request.headers[.ifMatch]
        let expectedHash = ifMatch.map { $0 == "null_etag" ? "" : $0 }
        var answer = json
        let outcome: WriteOutcome
        switch method {
        case .patch:
            let path = rest.path
            outcome = await withCheckedContinuation { continuation in
                Task { await database.update(path, json: json) { continuation.resume(returning: $0) } }
            }
        case .post:
            let id = database.pushIDs.next(now: Int64(Database.now()))
            let path = rest.path.child(ChildKey(id))
            answer = ["name": .string(id)]
            outcome = await withCheckedContinuation { continuation in
                Task {
                    await database.set(path, json: json, expectedHash: expectedHash) {
                        continuation.resume(returning: $0)
                    }
                }
            }
        default:
            let path = rest.path
            outcome = await withCheckedContinuation { continuation in
                Task {
                    await database.set(path, json: json, expectedHash: expectedHash) {
                        continuation.resume(returning: $0)
                    }
                }
            }
        }
        switch outcome {
        case .ok(let value):
            var headers = HTTPFields()
            if ifMatch != nil { headers[.eTag] = Self.etag(value) }
            if method == .put { answer = value.json(exportFormat: rest.parameters["format"] == "export") }
            if method == .delete { answer = .null }
            return Self.json(answer, status: .ok, headers: headers, rest: rest)
        case .datastale(let current):
            var headers = HTTPFields()
            headers[.eTag] = Self.etag(current)
            // The current value in the shape a GET gives (firebase-admin hands it to the next
            // transaction attempt in place of a fresh read).
            let body = current.json(exportFormat: rest.parameters["format"] == "export")
            return Self.json(body, status: .preconditionFailed, headers: headers, rest: rest)
        case .rejected(let error):
            return Self.error(.badRequest, error.message)
        }
    }

    private func rules(_ request: Request, rest: RESTRequest, database: Database) async throws -> Response {
        var request = request
        switch request.method {
        case .get, .head:
            return Self.json(await database.rules, status: .ok, headers: [:], rest: rest)
        case .put:
            guard request.headers[.authorization] == "Bearer owner" else {
                return Self.error(.unauthorized, "Permission denied")
            }
            let document: JSONValue
            do {
                document = try await Self.jsonBody(of: &request, limit: configuration.maxMessageBytes)
            } catch let refusal {
                return refusal.response
            }
            guard case .object(let members) = document, case .object? = members["rules"] else {
                return Self.error(.badRequest, "A rules document is an object with a \"rules\" object")
            }
            let failure: (any Error)? = await withCheckedContinuation { continuation in
                Task { await database.setRules(document) { continuation.resume(returning: $0) } }
            }
            if let failure { return Self.error(.internalServerError, "Could not store the rules: \(failure)") }
            return Self.json(["status": "ok"], status: .ok, headers: [:], rest: rest)
        default:
            return Self.methodNotAllowed(request.method, allowed: "GET, HEAD, PUT, OPTIONS")
        }
    }

    /// 405 with the `Allow` header and a message naming the allowed methods.
    static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: String) -> Response {
        var response = error(.methodNotAllowed, "Method \(method) is not allowed here; allowed: \(allowed)")
        response.headers[.allow] = allowed
        return response
    }

    /// The ETag of a value: its node hash, or `null_etag` for no data.
    static func etag(_ node: Node) -> String {
        node.isEmpty ? "null_etag" : node.hash
    }

    static func json(
        _ value: JSONValue, status: HTTPResponse.Status, headers: HTTPFields, rest: RESTRequest
    ) -> Response {
        var headers = headers
        if rest.parameters["print"] == "silent", status == .ok {
            return Response(status: .noContent, headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        let text = value.serialized(pretty: rest.parameters["print"] == "pretty")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        let text = JSONValue.object(["error": .string(message)]).serialized()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
