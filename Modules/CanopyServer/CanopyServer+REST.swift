import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import Query
import Rules
import Transport
import Tree

extension CanopyServer {
    /// Answers one REST request (`GET|HEAD|PUT|PATCH|POST|DELETE /path.json`, `/health`, `/metrics`,
    /// and CORS preflights), every answer readable by a browser page of any origin.
    func respond(to request: Request, context: ServerRequestContext) async throws -> Response {
        metrics.restRequests.increment()
        logger.debug(
            "REST request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)",
                "client": "\(clientOrigin(of: request, channel: context.channel))",
            ])
        var response = try await answer(request, channel: context.channel)
        Self.allowCrossOrigin(&response.headers)
        return response
    }

    private func answer(_ request: Request, channel: any Channel) async throws -> Response {
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
        // A write this process could not store because the namespace moved to another process
        // meanwhile (nothing was stored) is looked up again, and so taken to the new owner.
        var request = request
        for attempt in 1...2 {
            let lease: DatabaseLease
            do {
                lease = try await databases.lease(namespace)
            } catch .invalidName(let name) {
                return Self.error(.badRequest, "Invalid namespace \"\(name)\"")
            } catch .unknown(let name) {
                return Self.error(.notFound, "Namespace \"\(name)\" does not exist")
            } catch .storage(let reason) {
                return Self.error(.internalServerError, "Storage error: \(reason)")
            } catch .tooManyOpen(let limit) {
                return Self.error(.serviceUnavailable, "Too many namespaces in use (at most \(limit)); try again later")
            } catch .servedElsewhere(let name, let node, let host) {
                guard let host else {
                    return Self.error(.serviceUnavailable, "Namespace \"\(name)\" is served by \(node)")
                }
                return await forward(request, to: host, namespace: name, channel: channel)
            } catch .shuttingDown {
                return Self.error(.serviceUnavailable, "The server is shutting down")
            }
            if let response = try await serve(&request, rest: rest, lease: lease, channel: channel) {
                return response
            }
            logger.debug(
                "a REST write found its namespace moved; looking it up again",
                metadata: ["namespace": "\(namespace)", "attempt": "\(attempt)"])
        }
        return Self.error(.serviceUnavailable, WriteError.moved(namespace).message)
    }

    /// Answers `request` from the database `lease` holds (releasing the lease, unless an event
    /// stream keeps it); `nil` for a write not stored because the namespace moved to another process.
    /// The request's body is read here, and kept in `request` for a second attempt.
    private func serve(
        _ request: inout Request, rest: RESTRequest, lease: DatabaseLease, channel: any Channel
    ) async throws -> Response? {
        // An event stream keeps its lease until it ends.
        var leaseOutlivesRequest = false
        defer { if !leaseOutlivesRequest { lease.release() } }
        let database = lease.database
        let caller: Caller
        let expiresAt: Date?
        switch await self.caller(of: request, rest: rest) {
        case .success(let found): (caller, expiresAt) = found
        case .failure(let refusal): return refusal.response
        }
        if rest.isRulesDocument { return try await rules(request, rest: rest, caller: caller, database: database) }
        switch request.method {
        case .get:
            if request.headers[.accept]?.contains("text/event-stream") == true {
                leaseOutlivesRequest = true
                return await eventStream(rest, caller: caller, until: expiresAt, lease: lease, channel: channel)
            }
            return await read(rest, request: request, caller: caller, database: database)
        case .head:
            // The answer to a GET; NIO's encoder leaves out the body and keeps its length.
            return await read(rest, request: request, caller: caller, database: database)
        case .put, .patch, .post:
            let json: JSONValue
            do {
                json = try await Self.jsonBody(of: &request, limit: configuration.maxMessageBytes)
            } catch let refusal {
                return refusal.response
            }
            return await write(
                request.method, json: json, rest: rest, request: request, caller: caller, database: database)
        case .delete:
            return await write(.delete, json: .null, rest: rest, request: request, caller: caller, database: database)
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

    private func read(_ rest: RESTRequest, request: Request, caller: Caller, database: Database) async -> Response {
        let params: QueryParams
        do {
            params = try QueryParams(restParameters: rest.parameters)
        } catch {
            return Self.error(.badRequest, error.description)
        }
        guard let node = await database.read(rest.path, params: params, caller: caller) else {
            return Self.permissionDenied
        }
        // The hash of a large location costs more than writing it: only when asked for.
        let wantsETag = request.headers[HTTPField.Name("X-Firebase-ETag")!] == "true"
        var headers = HTTPFields()
        if let expected = request.headers[.ifNoneMatch] {
            let etag = Self.etag(node)
            headers[.eTag] = etag
            if expected == etag { return Response(status: .notModified, headers: headers) }
        } else if wantsETag {
            headers[.eTag] = Self.etag(node)
        }
        let shallow = rest.parameters["shallow"] == "true"
        if shallow, !node.isLeaf, !node.isEmpty {
            let value = JSONValue.object(
                Dictionary(uniqueKeysWithValues: node.children.map { ($0.key.string, JSONValue.bool(true)) }))
            return Self.json(value, status: .ok, headers: headers, rest: rest)
        }
        if rest.parameters["print"] == "silent" { return Response(status: .noContent, headers: headers) }
        let text = node.jsonText(
            exportFormat: !shallow && rest.parameters["format"] == "export", arrayAtTop: params.loadsAllData,
            pretty: rest.parameters["print"] == "pretty")
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// `nil` when the write was not stored because the namespace moved to another process.
    private func write(
        _ method: HTTPRequest.Method, json: JSONValue, rest: RESTRequest, request: Request, caller: Caller,
        database: Database
    ) async -> Response? {
        let ifMatch = request.headers[.ifMatch]
        let expectedHash = ifMatch.map { $0 == "null_etag" ? "" : $0 }
        var answer = json
        let outcome: WriteOutcome
        switch method {
        case .patch:
            outcome = await database.update(rest.path, json: json, as: caller)
        case .post:
            let id = database.pushIDs.next(now: Int64(Database.now()))
            answer = ["name": .string(id)]
            outcome = await database.set(
                rest.path.child(ChildKey(id)), json: json, expectedHash: expectedHash, as: caller)
        default:
            outcome = await database.set(rest.path, json: json, expectedHash: expectedHash, as: caller)
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
        case .rejected(let error) where error == .permissionDenied:
            return Self.permissionDenied
        case .rejected(let error) where error.isMoved:
            return nil
        case .rejected(let error) where error.status == .unavailable:
            return Self.error(.serviceUnavailable, error.message)
        case .rejected(let error) where error.status == .storageError:
            return Self.error(.internalServerError, error.message)
        case .rejected(let error):
            return Self.error(.badRequest, error.message)
        }
    }

    /// `GET` (the text as set; with `format=strict`, its JSON without comments) and
    /// `PUT /.settings/rules.json`, for the admin only. A document that does not parse is refused
    /// with its line, column and reason, and the rules in force stay.
    private func rules(
        _ request: Request, rest: RESTRequest, caller: Caller, database: Database
    ) async throws -> Response {
        guard [.get, .head, .put].contains(request.method) else {
            return Self.methodNotAllowed(request.method, allowed: "GET, HEAD, PUT, OPTIONS")
        }
        guard caller.isAdmin else { return Self.permissionDenied }
        var request = request
        switch request.method {
        case .get, .head:
            let text = await database.rulesText
            if rest.parameters["format"] == "strict", let strict = try? RulesDocument.strictJSON(of: text) {
                return Self.json(strict, status: .ok, headers: [:], rest: rest)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        case .put:
            let text: String
            do {
                let buffer = try await request.collectBody(upTo: configuration.maxMessageBytes)
                text = String(buffer: buffer)
            } catch is NIOTooManyBytesError {
                return BodyRefusal.tooLarge(limit: configuration.maxMessageBytes).response
            } catch {
                return BodyRefusal.malformed(error).response
            }
            let document: RulesDocument
            do {
                document = try RulesDocument(parsing: text)
            } catch {
                return Self.error(.badRequest, "Line \(error.line), column \(error.column): \(error.reason)")
            }
            do {
                try await database.setRules(document, text: text)
            } catch {
                return Self.error(.internalServerError, "Could not store the rules: \(error)")
            }
            return Self.json(["status": "ok"], status: .ok, headers: [:], rest: rest)
        default:
            return Self.methodNotAllowed(request.method, allowed: "GET, HEAD, PUT, OPTIONS")
        }
    }

    /// 401 `{"error": "Permission denied"}`, exactly what Firebase answers for a rules denial.
    static var permissionDenied: Response { error(.unauthorized, "Permission denied") }

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

    /// `307 Temporary Redirect` to the same path on `host`, the process serving `namespace`, with
    /// `ns=` in the query (the namespace may have come from this request's host name). Method and
    /// body are kept by clients that follow a 307 (curl -L, Python's requests, firebase-admin).
    /// The scheme is the one the client used (`origin`).
    static func redirect(_ request: Request, to host: String, namespace: String, origin: ClientOrigin) -> Response {
        var headers = HTTPFields()
        headers[.location] = "\(origin.scheme)://\(host)" + pathAndQuery(of: request, namespace: namespace)
        headers[.contentType] = "application/json; charset=utf-8"
        let text = JSONValue.object(["error": .string("Namespace \"\(namespace)\" is served at \(host)")]).serialized()
        return Response(
            status: .temporaryRedirect, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The path and query of `request` as received, byte for byte (URLComponents' setters end the
    /// process on characters they do not expect, which a client chooses), with `ns=namespace` (the
    /// namespace may have come from the request's host name; its name needs no escaping).
    static func pathAndQuery(of request: Request, namespace: String) -> String {
        var parameters = (request.uri.query ?? "").split(separator: "&").filter {
            $0.prefix { $0 != "=" } != "ns"
        }
        parameters.append("ns=\(namespace)")
        return "\(request.uri.path)?" + parameters.joined(separator: "&")
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        let text = JSONValue.object(["error": .string(message)]).serialized()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
