#if os(Linux)
import AsyncHTTPClient
import Canopy
import CanopyTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// Canopy behind Debian's nginx with the sample configuration of `Docs/nginx/canopy.conf`: TLS
/// ends at nginx, which passes requests on in plain HTTP, from 127.0.0.2, to a `canopy-server`
/// started with `--trusted-proxies 127.0.0.2/32`. The test client connects from 127.0.0.1.
@Suite(
    .enabled(if: NginxProxy.isEnabled, "needs nginx (Debian's nginx package); under CI=true a missing nginx fails"),
    .timeLimit(.minutes(3)))
struct ReverseProxyTests {
    @Test func swiftSDKOverWSSThroughNginx() async throws {
        try await withProxiedServer { server, nginx, certificate in
            let namespace = "proxied\(UInt32.random(in: 0...UInt32.max))"
            let database = Database.database(url: "\(nginx.baseURL)?ns=\(namespace)")
            database.serverTrust = try .addingCertificateAuthorities(
                pemFile: URL(fileURLWithPath: certificate.certificatePath))
            database.networkPathMonitor = nil
            defer { database.goOffline() }
            let scores = database.reference(withPath: "scores")
            try await scores.setValue(["ada": 36, "alan": 41, "grace": 39])

            var values = scores.child("ada").values.makeAsyncIterator()
            #expect(try await values.next()?.value as? Int == 36)
            try await scores.child("ada").setValue(37)
            #expect(try await values.next()?.value as? Int == 37)

            let top = try await scores.queryOrderedByValue().queryLimited(toLast: 2).getData()
            #expect(top.children.compactMap { ($0 as? DataSnapshot)?.key } == ["grace", "alan"])

            try await database.reference(withPath: "status").onDisconnectSetValue("gone")
            database.goOffline()
            let direct = try await CLIProcess.run(
                ["get", "status"], environment: ["CANOPY_DATABASE_URL": "\(server.baseURL)?ns=\(namespace)"])
            let wentOffline = await eventually {
                try await CLIProcess.run(
                    ["get", "status"], environment: ["CANOPY_DATABASE_URL": "\(server.baseURL)?ns=\(namespace)"]
                ).stdout == "\"gone\"\n"
            }
            #expect(wentOffline, "onDisconnect ran through nginx: \(direct.stdout)")

            // Canopy's log names the client (127.0.0.1, as nginx saw it) and its scheme, not nginx.
            let opened = server.log.split(separator: "\n").filter {
                $0.contains("realtime connection opened") && $0.contains("namespace=\(namespace)")
            }
            #expect(!opened.isEmpty, "\(server.log.suffix(2000))")
            for line in opened {
                #expect(line.contains("client=127.0.0.1") && line.contains("scheme=https"), "\(line)")
            }
        }
    }

    @Test func theSDKSaysWhenTheCertificateIsRefused() async throws {
        try await withProxiedServer { _, nginx, _ in
            // The system's trust roots do not hold the test's self-signed certificate.
            let database = Database.database(url: "\(nginx.baseURL)?ns=refused\(UInt32.random(in: 0...UInt32.max))")
            database.networkPathMonitor = nil
            defer { database.goOffline() }
            _ = database.reference(withPath: "x").observe(.value) { _ in }
            let refused = await eventually {
                if case .certificateRefused(let message)? = database.connectionError {
                    return message.contains("localhost:\(nginx.port)") && message.contains("not trusted")
                }
                return false
            }
            #expect(refused, "\(String(describing: database.connectionError))")
        }
    }

    @Test func forwardedHeadersCountOnlyFromTrustedProxies() async throws {
        try await withProxiedServer { server, nginx, certificate in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(certificate.certificatePath)]
            let http = HTTPClient(configuration: .init(tlsConfiguration: tls))
            defer { _ = http.shutdown() }
            func get(_ url: String, marker: String) async throws {
                var request = HTTPClientRequest(url: url + "/\(marker).json?ns=forged")
                request.headers.add(name: "X-Forwarded-For", value: "203.0.113.9")
                request.headers.add(name: "X-Forwarded-Proto", value: "https")
                let response = try await http.execute(request, timeout: .seconds(30))
                #expect(response.status == .ok)
                _ = try await response.body.collect(upTo: 1 << 20)
            }
            // Straight to Canopy from 127.0.0.1, which is no trusted proxy: the headers are ignored.
            try await get(server.baseURL, marker: "direct")
            // Through nginx, which appends its peer: the forged entry is left of an untrusted hop.
            try await get(nginx.baseURL, marker: "proxied")
            let logged = await eventually {
                server.log.contains("path=/direct.json") && server.log.contains("path=/proxied.json")
            }
            #expect(logged)
            let lines = server.log.split(separator: "\n").filter { $0.contains("REST request") }
            for marker in ["direct", "proxied"] {
                let line = lines.first { $0.contains("path=/\(marker).json") } ?? ""
                #expect(line.contains("client=127.0.0.1") && !line.contains("203.0.113.9"), "\(line)")
            }
        }
    }

    @Test func theCLIOverHTTPSThroughNginx() async throws {
        try await withProxiedServer { _, nginx, certificate in
            let url = ["--url", "\(nginx.baseURL)?ns=cli"]
            let set = try await CLIProcess.run(
                ["set", "greeting", #""hello""#] + url + ["--ca-file", certificate.certificatePath])
            #expect(set.status == 0, "\(set.stderr)")

            let pinned = try await CLIProcess.run(
                ["get", "greeting"] + url + ["--test-only-pin-sha256", certificate.sha256])
            #expect(pinned.status == 0, "\(pinned.stderr)")
            #expect(pinned.stdout == "\"hello\"\n")

            let fromEnvironment = try await CLIProcess.run(
                ["get", "greeting"] + url, environment: ["CANOPY_CA_FILE": certificate.certificatePath])
            #expect(fromEnvironment.stdout == "\"hello\"\n", "\(fromEnvironment.stderr)")

            // The realtime protocol (server-time connects with the SDK) with the pin.
            let time = try await CLIProcess.run(["server-time"] + url + ["--test-only-pin-sha256", certificate.sha256])
            #expect(time.status == 0, "\(time.stderr)")

            let untrusted = try await CLIProcess.run(["get", "greeting"] + url)
            #expect(untrusted.status == 69)
            #expect(untrusted.stderr.contains("certificate refused"), "\(untrusted.stderr)")
            #expect(untrusted.stderr.contains("not trusted"), "\(untrusted.stderr)")

            let otherPin = String(repeating: "AB:", count: 31) + "AB"
            let mismatched = try await CLIProcess.run(
                ["get", "greeting"] + url + ["--test-only-pin-sha256", otherPin])
            #expect(mismatched.status == 69)
            #expect(mismatched.stderr.contains("is not the pinned one"), "\(mismatched.stderr)")
            #expect(mismatched.stderr.contains(certificate.sha256), "names the certificate seen: \(mismatched.stderr)")
        }
    }

    /// Runs `body` with a `canopy-server` process trusting nginx, nginx in front of it, and the
    /// certificate nginx serves.
    private func withProxiedServer(
        _ body: (ServerProcess, NginxProxy, TestCertificate) async throws -> Void
    ) async throws {
        let executable = try #require(ServerProcess.locateExecutable(), "canopy-server is built with the tests")
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let certificate = try await TestCertificate.make(in: folder)
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder + "/data",
            arguments: ["--trusted-proxies", "\(NginxProxy.proxyAddress)/32", "--log-level", "debug"])
        let nginx: NginxProxy
        do {
            nginx = try await NginxProxy.start(certificate: certificate, upstreamPort: server.port)
        } catch {
            await server.terminate()
            throw error
        }
        do {
            try await body(server, nginx, certificate)
        } catch {
            Issue.record("nginx's error log: \(nginx.errorLog.suffix(2000))")
            await nginx.stop()
            await server.terminate()
            throw error
        }
        await nginx.stop()
        await server.terminate()
    }
}
#endif
