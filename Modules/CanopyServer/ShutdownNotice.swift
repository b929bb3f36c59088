import Logging
import ServiceLifecycle

/// Logs that a graceful shutdown has begun and ends every REST event stream (a stream never ends by
/// itself, so the HTTP server would otherwise wait for it for good). Listed last in the service
/// group, it is told first (the group shuts services down in reverse order), before connections
/// close and commits finish.
struct ShutdownNotice: Service {
    let connections: OpenConnections
    let logger: Logger

    func run() async {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: not a graceful shutdown
        }
        logger.info("graceful shutdown started: ending event streams, closing connections, finishing commits")
        connections.endStreams()
    }
}
