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

/// The REST API: reads, writes, event streams and the rules of a namespace, at `/path.json`.
///
/// Each request holds a ``DatabaseLease`` while it is answered (an event stream until it ends);
/// one for a namespace another process serves goes to the ``RESTForwarder``.
struct RESTController: Sendable {
    let databases: DatabaseRegistry
    let authenticator: Authenticator
    let eventStreams: EventStreamController
    let forwarder: RESTForwarder
    /// The namespace of a request that names none.
    let defaultNamespace: String
    /// The largest request body read (``ServerConfiguration/maxMessageBytes``).
    let maxBodyBytes: Int
    let logger: Logger
    /// Which browser pages may use the admin credential.
    var adminOrigins = AdminOriginCheck()
    /// Runs once a write with a body of at least ``HeapTrimmer/largeBodyBytes`` was answered.
    var afterLargeWrite: @Sendable () -> Void = {}

    /// Answers a request for a location of the tree (`/path.json`) or the rules
    /// (`/.settings/rules.json`): from this process's database of its namespace, or, when another
    /// process of the cluster serves it, from that process (redirected or proxied).
    func respond(to request: Request, channel: any Channel) async throws -> Response {
        let rest: RESTRequest
        do {
            rest = try RESTRequest(path: request.uri.path, query: request.uri.query)
        } catch .notJSONPath {
            return RESTResponse.error(.notFound, "Not found: REST paths end in .json (for example /users/ada.json)")
        } catch .invalidPath(let reason) {
            return RESTResponse.error(.badRequest, "Invalid path: \(reason)")
        }
        let namespace = rest.namespace(host: request.head.authority, default: defaultNamespace)
        // A write this process could not store because the namespace moved to another process
        // meanwhile (nothing was stored) is looked up again, and so taken to the new owner.
        var request = request
        for attempt in 1...2 {
            let lease: DatabaseLease
            do {
                lease = try await databases.lease(namespace)
            } catch .invalidName(let name) {
                return RESTResponse.error(.badRequest, "Invalid namespace \"\(name)\"")
            } catch .unknown(let name) {
                return RESTResponse.error(.notFound, "Namespace \"\(name)\" does not exist")
            } catch .storage(let reason) {
                return RESTResponse.error(.internalServerError, "Storage error: \(reason)")
            } catch .tooManyOpen(let limit) {
                return RESTResponse.error(
                    .serviceUnavailable, "Too many namespaces in use (at most \(limit)); try again later")
            } catch .servedElsewhere(let name, let node, let host) {
                guard let host else {
                    return RESTResponse.error(.serviceUnavailable, "Namespace \"\(name)\" is served by \(node)")
                }
                return await forwarder.forward(request, to: host, namespace: name, channel: channel)
            } catch .shuttingDown {
                return RESTResponse.error(.serviceUnavailable, "The server is shutting down")
            }
            let served = try await RequestTransport.$current.withValue(.rest) {
                try await serve(&request, rest: rest, lease: lease, channel: channel)
            }
            if let response = served {
                return response
            }
            logger.debug(
                "a REST write found its namespace moved; looking it up again",
                metadata: ["namespace": "\(namespace)", "attempt": "\(attempt)"])
        }
        return RESTResponse.error(.serviceUnavailable, WriteError.moved(namespace).message)
    }

    /// Answers `request` from the database `lease` holds (releasing the lease, unless an event
    /// stream keeps it); `nil` for a write (or rules) not stored because the namespace moved to another
    /// process.
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
        if rest.isRulesDocument { return try await rules(&request, rest: rest, caller: caller, database: database) }
        if let tool = rest.rulesTool {
            return await rulesTool(tool, &request, rest: rest, caller: caller, database: database)
        }
        switch request.method {
        case .get:
            if request.headers[.accept]?.contains("text/event-stream") == true {
                leaseOutlivesRequest = true
                return await eventStreams.stream(rest, caller: caller, until: expiresAt, lease: lease, channel: channel)
            }
            return await read(rest, request: request, caller: caller, database: database)
        case .head:
            // The answer to a GET; NIO's encoder leaves out the body and keeps its length.
            return await read(rest, request: request, caller: caller, database: database)
        case .put, .patch, .post:
            let body: ByteBuffer
            do {
                body = try await Self.body(of: &request, limit: maxBodyBytes)
            } catch let refusal {
                return refusal.response
            }
            defer { if body.readableBytes >= HeapTrimmer.largeBodyBytes { afterLargeWrite() } }
            if request.method == .patch, let prepared = Self.prepareUpdate(rest.path, body: body) {
                return await update(
                    prepared, body: body, rest: rest, request: request, caller: caller, database: database)
            }
            let json: JSONValue
            do {
                json = try Self.json(of: body)
            } catch let refusal {
                return refusal.response
            }
            return await write(
                request.method, json: json, rest: rest, request: request, caller: caller, database: database)
        case .delete:
            return await write(.delete, json: .null, rest: rest, request: request, caller: caller, database: database)
        default:
            return RESTResponse.methodNotAllowed(request.method, allowed: HTTPRefusal.dataMethods)
        }
    }

    /// Why a request body could not be read as JSON.
    enum BodyRefusal: Error {
        case tooLarge(limit: Int)
        case malformed(any Error)
        case notJSON

        var response: Response {
            switch self {
            case .tooLarge(let limit): RESTResponse.error(.contentTooLarge, "Request body exceeds \(limit) bytes")
            case .malformed(let error): RESTResponse.error(.badRequest, "Malformed request body: \(error)")
            case .notJSON:
                RESTResponse.error(.badRequest, "Invalid data; couldn't parse JSON object, array, or value.")
            }
        }
    }

    /// The request's body parsed as JSON.
    static func jsonBody(of request: inout Request, limit: Int) async throws(BodyRefusal) -> JSONValue {
        try json(of: try await body(of: &request, limit: limit))
    }

    /// The request's body, at most `limit` bytes.
    static func body(of request: inout Request, limit: Int) async throws(BodyRefusal) -> ByteBuffer {
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw .tooLarge(limit: limit)
        } catch {
            // A chunked body the decoder could not parse, for example (HTTPErrorHandler has
            // already answered; this answer is for any other failure to read).
            throw .malformed(error)
        }
    }

    /// `body` parsed as JSON.
    static func json(of body: ByteBuffer) throws(BodyRefusal) -> JSONValue {
        let parsed =
            body.readableBytesView.withContiguousStorageIfAvailable { bytes in
                Result { () throws(TreeError) in try JSONValue(parsing: bytes) }
            } ?? Result { () throws(TreeError) in try JSONValue(parsing: Data(body.readableBytesView)) }
        do {
            return try parsed.get()
        } catch {
            throw .notJSON
        }
    }

    /// The nodes of the update `body` holds, built straight from its bytes when they can be (see
    /// ``Database/prepareUpdate(_:body:)``).
    static func prepareUpdate(_ path: Path, body: ByteBuffer) -> PreparedUpdate? {
        body.readableBytesView.withContiguousStorageIfAvailable { Database.prepareUpdate(path, body: $0) } ?? nil
    }
}
