import HTTPTypes
import Hummingbird
import NIOCore
import Rules
import Tree

/// The rules document at `/.settings/rules.json`, for the admin only.
extension RESTController {
    /// `GET` (the text as set; with `format=strict`, its JSON without comments) and
    /// `PUT /.settings/rules.json`, for the admin only. A document that does not parse is refused
    /// with its line, column and reason, and the rules in force stay. `nil` for rules not stored
    /// because the namespace moved to another process (the body stays in `request` for the next
    /// attempt, as a write's does).
    func rules(
        _ request: inout Request, rest: RESTRequest, caller: Caller, database: Database
    ) async throws -> Response? {
        guard [.get, .head, .put].contains(request.method) else {
            return RESTResponse.methodNotAllowed(request.method, allowed: "GET, HEAD, PUT, OPTIONS")
        }
        guard caller.isAdmin else { return RESTResponse.permissionDenied }
        switch request.method {
        case .get, .head:
            let text = await database.rulesText
            if rest.parameters["format"] == "strict", let strict = try? RulesDocument.strictJSON(of: text) {
                return RESTResponse.json(strict, status: .ok, headers: [:], rest: rest)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        case .put:
            let text: String
            do {
                let buffer = try await request.collectBody(upTo: maxBodyBytes)
                text = String(buffer: buffer)
            } catch is NIOTooManyBytesError {
                return BodyRefusal.tooLarge(limit: maxBodyBytes).response
            } catch {
                return BodyRefusal.malformed(error).response
            }
            let document: RulesDocument
            do {
                document = try RulesDocument(parsing: text)
            } catch {
                return RESTResponse.error(.badRequest, "Line \(error.line), column \(error.column): \(error.reason)")
            }
            do {
                try await database.setRules(document, text: text)
            } catch {
                if await database.isMoved(by: error) { return nil }
                return RESTResponse.error(.internalServerError, "Could not store the rules: \(error)")
            }
            return RESTResponse.json(["status": "ok"], status: .ok, headers: [:], rest: rest)
        default:
            return RESTResponse.methodNotAllowed(request.method, allowed: "GET, HEAD, PUT, OPTIONS")
        }
    }
}
