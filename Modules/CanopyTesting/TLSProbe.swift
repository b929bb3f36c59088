import Crypto
import Foundation
import NIOCore
import NIOPosix
public import NIOSSL
import NIOTLS

/// One TLS handshake with a server, to see what it presents: the certificate (by its SHA-256
/// fingerprint, as ``TestIdentity/fingerprint``) and the application protocol agreed (ALPN).
///
/// ```swift
/// let handshake = try await TLSProbe.handshake(port: port, configuration: try authority.clientConfiguration())
/// #expect(handshake.fingerprint == identity.fingerprint)
/// ```
public enum TLSProbe {
    public struct Handshake: Sendable {
        public var fingerprint: String
        public var negotiatedProtocol: String?
    }

    /// Connects to `host:port`, completes a handshake as `serverName` with `configuration` (the
    /// client offers ALPN `h2` and `http/1.1` unless it names its own), and closes. Throws what
    /// failed the handshake.
    public static func handshake(
        host: String = "127.0.0.1", port: Int, serverName: String? = "localhost", configuration: TLSConfiguration
    ) async throws -> Handshake {
        var configuration = configuration
        if configuration.applicationProtocols.isEmpty { configuration.applicationProtocols = ["h2", "http/1.1"] }
        let context = try NIOSSLContext(configuration: configuration)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handshake = HandshakeWatcher(promise: channel.eventLoop.makePromise())
                    try channel.pipeline.syncOperations.addHandlers(
                        try NIOSSLClientHandler(context: context, serverHostname: serverName), handshake)
                }
            }
            .connect(host: host, port: port).get()
        defer { channel.close(promise: nil) }
        let watcher = try await channel.pipeline.handler(type: HandshakeWatcher.self).get()
        let negotiated = try await watcher.promise.futureResult.get()
        guard let certificate = try await channel.nioSSL_peerCertificate().get() else {
            throw TLSProbeError.noCertificate
        }
        let fingerprint = SHA256.hash(data: try certificate.toDERBytes()).map { String(format: "%02x", $0) }.joined()
        return Handshake(fingerprint: fingerprint, negotiatedProtocol: negotiated)
    }
}

/// Why ``TLSProbe`` got no certificate.
public enum TLSProbeError: Error {
    case noCertificate
    case closedBeforeHandshake
}

/// Completes `promise` with the agreed protocol once the handshake completes, or fails it.
private final class HandshakeWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let promise: EventLoopPromise<String?>

    init(promise: EventLoopPromise<String?>) {
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            promise.succeed(negotiated)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(TLSProbeError.closedBeforeHandshake)
        context.fireChannelInactive()
    }
}
