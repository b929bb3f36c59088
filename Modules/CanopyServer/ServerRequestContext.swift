import Hummingbird
import NIOCore

/// canopy-server's request context: Hummingbird's basic one plus the connection's channel, whose
/// close ends an event stream at once, whether or not its response had started.
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
