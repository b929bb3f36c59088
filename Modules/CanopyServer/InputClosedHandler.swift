import NIOCore

/// Tells when the client closed its side of the connection. Hummingbird allows half-closed
/// connections, so a client that leaves only closes the input, and a response that is waiting
/// to write (an event stream between events) would not notice it until its next write.
final class InputClosedHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private let onInputClosed: @Sendable () -> Void

    init(_ onInputClosed: @escaping @Sendable () -> Void) {
        self.onInputClosed = onInputClosed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { onInputClosed() }
        context.fireUserInboundEventTriggered(event)
    }
}
