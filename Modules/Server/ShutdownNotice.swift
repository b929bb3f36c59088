import Logging
import ServiceLifecycle

/// Logs that a graceful shutdown has begun. Listed last in the service group, it is told first
/// (the group shuts services down in reverse order), before connections close and commits finish.
struct ShutdownNotice: Service {
    let logger: Logger

    func run() async {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: not a graceful shutdown
        }
        logger.info("graceful shutdown started: closing connections, finishing requests and commits")
    }
}
