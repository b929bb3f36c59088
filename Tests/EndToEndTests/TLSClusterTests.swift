import AsyncHTTPClient
import Auth
import CanopyServer
import CanopyTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// A cluster whose processes serve TLS: REST redirects name `https://`, and a request proxied to the
/// owner goes over HTTPS and is sent only to an owner whose certificate verifies (the system's trust
/// roots and `--tls-ca-file`).
@Suite(.serialized, .enabled(if: PostgresTestCluster.isEnabled), .timeLimit(.minutes(3)))
struct TLSClusterTests {
    @Test func redirectsNameHTTPSAndTheProxyVerifiesTheOwner() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let authorityFile = try authority.writeCertificate(to: folder)
        let files = try authority.issue().write(to: folder)
        let admin = "Bearer \(SignedTokens.adminSecret)"
        try await withPostgresCluster { cluster in
            let ports = (try TestServer.reservePort(), try TestServer.reservePort(), try TestServer.reservePort())
            func configure(_ node: String, port: Int, trustsAuthority: Bool) -> (inout ServerConfiguration) -> Void {
                { configuration in
                    configuration.joinCluster(cluster, node: node, port: port, advertisedHost: "localhost")
                    configuration.authentication.adminSecret = SignedTokens.adminSecret
                    configuration.tls = TLSFiles(certificate: files.certificate, key: files.key)
                    configuration.tlsCAFile = trustsAuthority ? authorityFile : nil
                }
            }
            var clientConfiguration = HTTPClient.Configuration(
                tlsConfiguration: try authority.clientConfiguration(), redirectConfiguration: .disallow)
            clientConfiguration.timeout.read = .seconds(30)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            defer { _ = client.shutdown() }
            func request(
                _ port: Int, _ method: HTTPMethod, _ target: String, authorized: Bool, body: String? = nil
            ) async throws -> HTTPClientResponse {
                var request = HTTPClientRequest(url: "https://localhost:\(port)\(target)")
                request.method = method
                if authorized { request.headers.add(name: "Authorization", value: admin) }
                if let body { request.body = .bytes(ByteBuffer(string: body)) }
                return try await client.execute(request, timeout: .seconds(30))
            }

            try await withTestServer(configure: configure("node-a", port: ports.0, trustsAuthority: true)) { _ in
                try await withTestServer(configure: configure("node-b", port: ports.1, trustsAuthority: true)) { _ in
                    try await withTestServer(configure: configure("node-c", port: ports.2, trustsAuthority: false)) {
                        _ in
                        let written = try await request(ports.0, .PUT, "/v.json?ns=shared", authorized: true, body: "1")
                        #expect(written.status == .ok)

                        let redirected = try await request(ports.1, .GET, "/v.json?ns=shared", authorized: false)
                        #expect(redirected.status == .temporaryRedirect)
                        #expect(
                            redirected.headers.first(name: "Location")
                                == "https://localhost:\(ports.0)/v.json?ns=shared")

                        let proxied = try await request(ports.1, .GET, "/v.json?ns=shared", authorized: true)
                        #expect(proxied.status == .ok)
                        #expect(String(buffer: try await proxied.body.collect(upTo: 1024)) == "1")

                        // node-c trusts only the system's roots, which do not hold the test's CA.
                        let untrusted = try await request(ports.2, .GET, "/v.json?ns=shared", authorized: true)
                        #expect(untrusted.status == .badGateway)
                        let refusal = String(buffer: try await untrusted.body.collect(upTo: 4096))
                        #expect(refusal.contains("did not answer"), "\(refusal)")
                    }
                }
            }
        }
    }
}
