import HTTPTypes
import Hummingbird

/// Cross-origin access: Firebase's REST API is open to every origin (access is decided by
/// credentials and rules, not by origin), and so is Canopy's.
enum CORS {
    /// Methods a browser page may use, as Firebase lists them in preflight answers.
    static let methods = "GET, PUT, POST, PATCH, DELETE, OPTIONS"
    /// Headers a page may send when its preflight names none.
    static let headers = "Authorization, Content-Type, X-Firebase-ETag, If-Match, If-None-Match"

    /// Lets a page of any origin read the answer, and the `ETag` of it.
    static func allow(_ headers: inout HTTPFields) {
        headers[.accessControlAllowOrigin] = "*"
        headers[.accessControlExposeHeaders] = "ETag"
    }

    /// Answers a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), or any `OPTIONS`:
    /// the methods, the headers the page asked for (or the usual ones), and how long to cache that.
    static func preflight(_ request: Request) -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowMethods] = methods
        headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders] ?? Self.headers
        headers[.accessControlMaxAge] = "3600"
        headers[.allow] = HTTPRefusal.dataMethods
        return Response(status: .noContent, headers: headers)
    }
}
