import Hummingbird
import Logging
import Prometheus

/// Routes each plain HTTP request to its controller: CORS preflights (`OPTIONS`, any path),
/// ``StatusController`` (`/health`, `/metrics`), ``ConsoleController`` (a browser asking for a page,
/// `/.console/`) and ``RESTController`` (everything else); every
/// answer readable by a browser page of any origin.
struct ServerRouter: HTTPResponder {
    let status: StatusController
    let console: ConsoleController
    let rest: RESTController
    let origins: OriginResolver
    let metrics: ServerMetrics
    let logger: Logger
    /// The console's admin-only views (`/.console/api/`).
    var consoleAPI: ConsoleAdminAPI? = nil

    func respond(to request: Request, context: ServerRequestContext) async throws -> Response {
        metrics.restRequests.increment()
        logger.debug(
            "REST request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)",
                "client": "\(origins.origin(of: request, channel: context.channel))",
            ])
        var response =
            if request.method == .options {
                CORS.preflight(request)
            } else if StatusController.paths.contains(request.uri.path) {
                status.respond(to: request)
            } else if let view = await consoleAPI?.respond(to: request) {
                view
            } else if let page = console.respond(to: request) {
                page
            } else {
                try await rest.respond(to: request, channel: context.channel)
            }
        CORS.allow(&response.headers)
        return response
    }
}
