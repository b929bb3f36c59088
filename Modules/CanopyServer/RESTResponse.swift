import HTTPTypes
import Hummingbird
import NIOCore
import Tree

/// The answers of the REST API, in Firebase's shapes: JSON bodies, `{"error": …}` refusals.
enum RESTResponse {
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

    /// `value` as the body (`print=pretty` indents it; `print=silent` answers a success with 204
    /// and no body).
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

    /// `node` as JSON (``Node/jsonText(exportFormat:arrayAtTop:pretty:)``: no ``JSONValue`` built on
    /// the way), or nothing with `print=silent`.
    static func node(
        _ node: Node, status: HTTPResponse.Status, headers: HTTPFields, rest: RESTRequest, arrayAtTop: Bool = true,
        exportFormat: Bool? = nil
    ) -> Response {
        var headers = headers
        if rest.parameters["print"] == "silent", status == .ok {
            return Response(status: .noContent, headers: headers)
        }
        let text = node.jsonText(
            exportFormat: exportFormat ?? (rest.parameters["format"] == "export"), arrayAtTop: arrayAtTop,
            pretty: rest.parameters["print"] == "pretty")
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// `status` with `{"error": message}`.
    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        let text = JSONValue.object(["error": .string(message)]).serialized()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
