import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Query
import Transport
import Tree

/// Reads (`GET`, `HEAD`, with queries, `shallow`, ETags) and writes (`PUT`, `PATCH`, `POST`,
/// `DELETE`, conditional on `If-Match`).
extension RESTController {
    func read(_ rest: RESTRequest, request: Request, caller: Caller, database: Database) async -> Response {
        let params: QueryParams
        do {
            params = try QueryParams(restParameters: rest.parameters)
        } catch {
            return RESTResponse.error(.badRequest, error.description)
        }
        guard let node = await database.read(rest.path, params: params, caller: caller) else {
            return RESTResponse.permissionDenied
        }
        // The hash of a large location costs more than writing it: only when asked for.
        let wantsETag = request.headers[HTTPField.Name("X-Firebase-ETag")!] == "true"
        var headers = HTTPFields()
        if let expected = request.headers[.ifNoneMatch] {
            let etag = RESTResponse.etag(node)
            headers[.eTag] = etag
            if expected == etag { return Response(status: .notModified, headers: headers) }
        } else if wantsETag {
            headers[.eTag] = RESTResponse.etag(node)
        }
        let shallow = rest.parameters["shallow"] == "true"
        if shallow, !node.isLeaf, !node.isEmpty {
            let value = JSONValue.object(
                Dictionary(uniqueKeysWithValues: node.children.map { ($0.key.string, JSONValue.bool(true)) }))
            return RESTResponse.json(value, status: .ok, headers: headers, rest: rest)
        }
        return RESTResponse.node(
            node, status: .ok, headers: headers, rest: rest, arrayAtTop: params.loadsAllData,
            exportFormat: !shallow && rest.parameters["format"] == "export")
    }

    /// `nil` when the write was not stored because the namespace moved to another process.
    func write(
        _ method: HTTPRequest.Method, json: JSONValue, rest: RESTRequest, request: Request, caller: Caller,
        database: Database
    ) async -> Response? {
        let ifMatch = request.headers[.ifMatch]
        let expectedHash = ifMatch.map { $0 == "null_etag" ? "" : $0 }
        var answer = json
        let outcome: WriteOutcome
        switch method {
        case .patch:
            let prepared = Database.prepareUpdate(rest.path, json: json)
            outcome = await database.update(rest.path, json: json, prepared: prepared, as: caller)
        case .post:
            let id = database.pushIDs.next(now: Int64(Database.now()))
            answer = ["name": .string(id)]
            outcome = await database.set(
                rest.path.child(ChildKey(id)), json: json, expectedHash: expectedHash, as: caller)
        default:
            outcome = await database.set(rest.path, json: json, expectedHash: expectedHash, as: caller)
        }
        return response(to: outcome, of: method, rest: rest, ifMatch: ifMatch) { answer }
    }

    /// A PATCH whose members were built from the bytes of its `body` (see
    /// ``prepareUpdate(_:body:)``); the body is parsed only to be echoed, when it is asked for.
    func update(
        _ prepared: PreparedUpdate, body: ByteBuffer, rest: RESTRequest, request: Request, caller: Caller,
        database: Database
    ) async -> Response? {
        let outcome = await database.update(rest.path, prepared: prepared, as: caller)
        return response(to: outcome, of: .patch, rest: rest, ifMatch: request.headers[.ifMatch]) {
            rest.parameters["print"] == "silent" ? .null : (try? Self.json(of: body)) ?? .null
        }
    }

    /// The answer to a write that ended with `outcome`; `answer` is what a PATCH or POST echoes.
    private func response(
        to outcome: WriteOutcome, of method: HTTPRequest.Method, rest: RESTRequest, ifMatch: String?,
        answer: () -> JSONValue
    ) -> Response? {
        switch outcome {
        case .ok(let value):
            var headers = HTTPFields()
            if ifMatch != nil { headers[.eTag] = RESTResponse.etag(value) }
            if method == .put { return RESTResponse.node(value, status: .ok, headers: headers, rest: rest) }
            return RESTResponse.json(method == .delete ? .null : answer(), status: .ok, headers: headers, rest: rest)
        case .datastale(let current):
            var headers = HTTPFields()
            headers[.eTag] = RESTResponse.etag(current)
            // The current value in the shape a GET gives (firebase-admin hands it to the next
            // transaction attempt in place of a fresh read).
            return RESTResponse.node(current, status: .preconditionFailed, headers: headers, rest: rest)
        case .rejected(let error) where error == .permissionDenied:
            return RESTResponse.permissionDenied
        case .rejected(let error) where error.isMoved:
            return nil
        case .rejected(let error) where error.status == .unavailable:
            return RESTResponse.error(.serviceUnavailable, error.message)
        case .rejected(let error) where error.status == .storageError:
            return RESTResponse.error(.internalServerError, error.message)
        case .rejected(let error):
            return RESTResponse.error(.badRequest, error.message)
        }
    }
}
