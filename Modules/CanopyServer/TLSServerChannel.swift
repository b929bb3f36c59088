import HummingbirdCore
import Logging
import NIOCore
import NIOSSL

/// A server child channel served over TLS, as HummingbirdTLS's `TLSChannel`, except that each
/// connection takes the TLS context ``ServedCertificate`` holds when it is accepted, so that a
/// renewed certificate reaches new connections without a restart; and a connection that does not
/// begin with a TLS handshake is refused by ``PlainHTTPRefusal``.
struct TLSServerChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let certificate: ServedCertificate

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandlers([
                PlainHTTPRefusal(), NIOSSLServerHandler(context: certificate.context),
            ])
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
