import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// The certificate a test pinned by its fingerprint (``TLSTrust/trustingSelfSignedCertificate(sha256:)``):
/// fetched from the server in a handshake whose verification accepts that fingerprint alone, then
/// kept, so that later connections trust exactly that certificate.
///
/// NIOSSL's custom verification callback cannot be handed to the WebSocket and HTTP client
/// libraries, which take a `TLSConfiguration` only; their connections trust the fetched
/// certificate as their only root instead.
final class PinnedCertificate: Sendable {
    let fingerprint: CertificateFingerprint
    private let fetched = Mutex<NIOSSLCertificate?>(nil)

    init(fingerprint: CertificateFingerprint) {
        self.fingerprint = fingerprint
    }

    /// The pinned certificate, fetched from `host:port` the first time.
    func certificate(host: String, port: Int, timeout: Duration) async throws(RealtimeClientError) -> NIOSSLCertificate
    {
        if let certificate = fetched.withLock({ $0 }) { return certificate }
        let certificate = try await fetch(host: host, port: port, timeout: timeout)
        fetched.withLock { $0 = certificate }
        return certificate
    }

    /// What the verification callback saw.
    private enum Verdict: Sendable {
        case pinned(NIOSSLCertificate)
        case other(String)
    }

    private func fetch(
        host: String, port: Int, timeout: Duration
    ) async throws(RealtimeClientError) -> NIOSSLCertificate {
        let server = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        let expected = fingerprint
        let verdict = Mutex<Verdict?>(nil)
        let channel: any Channel
        do {
            let context = try NIOSSLContext(configuration: configuration)
            // SNI names a host, never an address.
            let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName) {
                            chain, promise in
                            guard let leaf = chain.first, let seen = try? CertificateFingerprint(of: leaf) else {
                                verdict.withLock { $0 = .other("no certificate") }
                                promise.succeed(.failed)
                                return
                            }
                            if seen == expected {
                                verdict.withLock { $0 = .pinned(leaf) }
                                promise.succeed(.certificateVerified)
                            } else {
                                verdict.withLock { $0 = .other("SHA-256 \(seen)") }
                                promise.succeed(.failed)
                            }
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                        try channel.pipeline.syncOperations.addHandler(HandshakeWatch())
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            throw .connectFailed("\(server): \(error)")
        }
        let watch = try? await channel.pipeline.handler(type: HandshakeWatch.self).get()
        let outcome = await watch?.outcome(within: timeout) ?? .failed("the connection closed")
        channel.close(promise: nil)
        switch (outcome, verdict.withLock { $0 }) {
        case (.completed, .pinned(let certificate)?):
            return certificate
        case (_, .other(let seen)?):
            throw .certificateRefused(
                "the TLS certificate of \(server) (\(seen)) is not the pinned one (SHA-256 \(expected))")
        case (.timedOut, _):
            throw .timedOut(timeout)
        case (.failed(let reason), _):
            throw .connectFailed("\(server): no TLS handshake: \(reason)")
        case (.completed, _):
            throw .connectFailed("\(server): the TLS handshake completed without a certificate")
        }
    }
}

/// Tells when a client TLS handshake completed or failed.
private final class HandshakeWatch: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    enum Outcome: Sendable {
        case completed
        case failed(String)
        case timedOut
    }

    private let stream: AsyncStream<Outcome>
    private let sink: AsyncStream<Outcome>.Continuation

    init() {
        (stream, sink) = AsyncStream.makeStream(of: Outcome.self)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { sink.yield(.completed) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        sink.yield(.failed("\(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        sink.yield(.failed("the server closed the connection"))
        context.fireChannelInactive()
    }

    /// The first outcome, or `.timedOut` after `timeout`.
    func outcome(within timeout: Duration) async -> Outcome {
        await withTaskGroup(of: Outcome.self) { group in
            group.addTask { [stream] in
                for await outcome in stream { return outcome }
                return .failed("the connection closed")
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
    }
}
