import CanopyTesting
import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import RealtimeClientSocket
import SwiftASN1
import Testing
import Transport
import Tree
import X509

/// `wss://` through a TLS-terminating proxy (a self-signed certificate for `localhost` made in the
/// test) in front of a real in-process server.
@Suite(.timeLimit(.minutes(2)))
struct RealtimeClientTLSTests {
    @Test func connectsOverTLSWithATrustedCertificate() async throws {
        let identity = try SelfSignedIdentity(hostName: "localhost")
        try await withTestServer { server in
            let proxy = try await TLSProxy.start(identity: identity, upstreamPort: server.port)
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([identity.certificate])
            let endpoint = RealtimeEndpoint(host: "localhost", port: proxy.port, secure: true, namespace: "test")
            #expect(endpoint.webSocketURL(lastSession: nil).hasPrefix("wss://localhost:"))
            let client = try await RealtimeClient.connect(to: endpoint, tlsConfiguration: tls, logger: clientLogger)
            var messages = client.messages.makeAsyncIterator()
            let long = JSONValue.string(String(repeating: "s", count: 40_000))
            client.request(1, .put(path: "/secure", data: long, hash: nil))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)
            client.request(2, .get(path: "/secure", query: nil))
            #expect(await messages.messages(throughAnswerTo: 2).data(of: 2) == long)
            client.close()
            _ = await messages.remaining()
            #expect(client.endReason == .closed("closed by the client"))
            await proxy.stop()
        }
    }

    @Test func refusesAnUntrustedCertificate() async throws {
        let identity = try SelfSignedIdentity(hostName: "localhost")
        try await withTestServer { server in
            let proxy = try await TLSProxy.start(identity: identity, upstreamPort: server.port)
            let endpoint = RealtimeEndpoint(host: "localhost", port: proxy.port, secure: true, namespace: "test")
            do throws(RealtimeClientError) {
                // nil: the system's trust roots, which do not hold the test's certificate.
                let client = try await RealtimeClient.connect(to: endpoint, timeout: .seconds(20), logger: clientLogger)
                Issue.record("connected with an untrusted certificate: \(client.hello)")
            } catch {
                guard case .certificateRefused(let message) = error else {
                    Issue.record("expected .certificateRefused, got \(error)")
                    return
                }
                #expect(message.contains("localhost:\(proxy.port)") && message.contains("not trusted"), "\(message)")
            }
            await proxy.stop()
        }
    }

    @Test func trustsOnlyThePinnedSelfSignedCertificate() async throws {
        // A pinned certificate need not name the host (the WebSocket library refuses an IP address
        // in TLS: the client connects to localhost).
        let identity = try SelfSignedIdentity(hostName: "canopy.test")
        let other = try SelfSignedIdentity(hostName: "localhost")
        try await withTestServer { server in
            let proxy = try await TLSProxy.start(identity: identity, upstreamPort: server.port)
            let endpoint = RealtimeEndpoint(host: "localhost", port: proxy.port, secure: true, namespace: "test")
            let pinned = try TLSTrust.trustingSelfSignedCertificate(sha256: try identity.sha256().lowercased())
            let client = try await RealtimeClient.connect(to: endpoint, trust: pinned, logger: clientLogger)
            client.close()

            let wrongPin = try TLSTrust.trustingSelfSignedCertificate(sha256: try other.sha256())
            do throws(RealtimeClientError) {
                let client = try await RealtimeClient.connect(to: endpoint, trust: wrongPin, logger: clientLogger)
                Issue.record("connected with another certificate than the pinned one: \(client.hello)")
            } catch {
                guard case .certificateRefused(let message) = error else {
                    Issue.record("expected .certificateRefused, got \(error)")
                    return
                }
                #expect(message.contains(try identity.sha256()), "names the certificate seen: \(message)")
            }
            #expect(throws: TLSTrustError.invalidFingerprint("abc")) {
                try TLSTrust.trustingSelfSignedCertificate(sha256: "abc")
            }
            await proxy.stop()
        }
    }
}

/// A P-256 key and a self-signed certificate for one host name.
struct SelfSignedIdentity {
    let certificate: NIOSSLCertificate
    let privateKey: NIOSSLPrivateKey

    init(hostName: String) throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(hostName) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                SubjectAlternativeNames([.dnsName(hostName)])
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        self.certificate = try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
        self.privateKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
    }

    /// The certificate's SHA-256 fingerprint, `AB:CD:…`.
    func sha256() throws -> String {
        SHA256.hash(data: try certificate.toDERBytes()).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}

/// Terminates TLS on 127.0.0.1 and forwards the bytes to a plain TCP port on 127.0.0.1.
final class TLSProxy: Sendable {
    let port: Int
    private let task: Task<Void, Never>

    private init(port: Int, task: Task<Void, Never>) {
        self.port = port
        self.task = task
    }

    static func start(identity: SelfSignedIdentity, upstreamPort: Int) async throws -> TLSProxy {
        let context = try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: [.certificate(identity.certificate)], privateKey: .privateKey(identity.privateKey)))
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = listener.channel.localAddress?.port ?? 0
        let task = Task<Void, Never> {
            try? await listener.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { try? await forward(connection, toPort: upstreamPort) }
                    }
                }
            }
        }
        return TLSProxy(port: port, task: task)
    }

    private static func forward(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, toPort port: Int) async throws {
        let upstream = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await connection.executeThenClose { clientIn, clientOut in
            try await upstream.executeThenClose { upstreamIn, upstreamOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for try await bytes in clientIn { try await upstreamOut.write(bytes) } }
                    group.addTask { for try await bytes in upstreamIn { try await clientOut.write(bytes) } }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    /// Stops listening and drops every forwarded connection.
    func stop() async {
        task.cancel()
        await task.value
    }
}
