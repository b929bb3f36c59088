import NIOCore

/// Watches the raw bytes of a request line, before NIO's HTTP decoder sees them, so that an error
/// from the decoder can be told apart: it reports an over-long URL and an over-long header block
/// with the same error, and it calls a request line ending in a bare LF a bad version.
///
/// ``HTTPErrorHandler`` re-arms it at the end of each request. With pipelining off a client sends
/// the next request only after the answer, so a read never holds the end of one request and the
/// start of the next.
final class RequestLineMeter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Whether the request line is still being received (no line end seen yet).
    private(set) var inRequestLine = true
    /// Whether the request line ended in LF without CR.
    private(set) var requestLineEndsInBareLF = false
    private var lineLength = 0
    private var previousByte: UInt8 = 0

    /// Starts watching for the next request's line.
    func expectRequestLine() {
        inRequestLine = true
        requestLineEndsInBareLF = false
        lineLength = 0
        previousByte = 0
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if inRequestLine {
            scan(unwrapInboundIn(data).readableBytesView)
        }
        context.fireChannelRead(data)
    }

    private func scan(_ bytes: ByteBufferView) {
        for byte in bytes {
            defer { previousByte = byte }
            guard byte == UInt8(ascii: "\n") else {
                if byte != UInt8(ascii: "\r") { lineLength += 1 }
                continue
            }
            // Empty lines before a request are allowed (RFC 9112 §2.2).
            if lineLength == 0 { continue }
            inRequestLine = false
            requestLineEndsInBareLF = previousByte != UInt8(ascii: "\r")
            return
        }
    }
}
