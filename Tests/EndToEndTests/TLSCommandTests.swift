import CanopyTesting
import Foundation
import RealtimeClientSocket
import Testing
import Transport
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy-server --tls-cert-file --tls-key-file` as an operator runs it: a pair it cannot serve
/// stops it at start with one line, and a renewed pair is picked up on `SIGHUP` or when the files
/// change, without a restart.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"),
    .timeLimit(.minutes(3)))
struct TLSCommandTests {
    @Test func aPairThatCannotBeServedStopsTheServerWithOneLine() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let good = try authority.issue().write(to: folder, name: "good")
        let mismatched = try authority.issue().withKey(of: try authority.issue()).write(to: folder, name: "mismatched")
        let expiredIdentity = try authority.issue(
            notValidBefore: Date() - 10 * 24 * 3600, notValidAfter: Date() - 24 * 3600)
        let expired = try expiredIdentity.write(to: folder, name: "expired")
        let notPEM = folder + "/not-pem.crt"
        try "hello".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let expiry = expiredIdentity.notValidAfter.formatted(.iso8601)
        let cases: [(arguments: [String], environment: [String: String], line: String)] = [
            (
                ["--tls-cert-file", folder + "/missing.crt", "--tls-key-file", good.key], [:],
                "cannot serve TLS: cannot read --tls-cert-file \(folder)/missing.crt: no such file"
            ),
            (
                [], ["CANOPY_TLS_CERT_FILE": good.certificate, "CANOPY_TLS_KEY_FILE": folder + "/missing.key"],
                "cannot serve TLS: cannot read --tls-key-file \(folder)/missing.key: no such file"
            ),
            (
                ["--tls-cert-file", folder, "--tls-key-file", good.key], [:],
                "cannot serve TLS: cannot read --tls-cert-file \(folder): it is a folder"
            ),
            (
                ["--tls-cert-file", mismatched.certificate, "--tls-key-file", mismatched.key], [:],
                "cannot serve TLS: the private key in \(mismatched.key) (--tls-key-file) is not the key of the "
                    + "certificate in \(mismatched.certificate) (--tls-cert-file)"
            ),
            (
                ["--tls-cert-file", expired.certificate, "--tls-key-file", expired.key], [:],
                "cannot serve TLS: the certificate in \(expired.certificate) (--tls-cert-file) expired on \(expiry)"
            ),
            (
                ["--tls-cert-file", notPEM, "--tls-key-file", good.key], [:],
                "cannot serve TLS: --tls-cert-file \(notPEM) is not a PEM certificate chain: it holds no CERTIFICATE block"
            ),
            (
                ["--tls-cert-file", good.certificate, "--tls-key-file", good.certificate], [:],
                "cannot serve TLS: --tls-key-file \(good.certificate) is not a usable PEM private key: it holds no "
                    + "PRIVATE KEY block"
            ),
        ]
        let authorityCases: [(arguments: [String], environment: [String: String], line: String)] = [
            (
                ["--tls-ca-file", folder + "/missing-ca.pem"], [:],
                "cannot serve TLS: cannot read --tls-ca-file \(folder)/missing-ca.pem: no such file"
            ),
            (
                [], ["CANOPY_TLS_CA_FILE": notPEM],
                "cannot serve TLS: --tls-ca-file \(notPEM) is not a PEM file of CA certificates: it holds no "
                    + "CERTIFICATE block"
            ),
        ]
        for (arguments, environment, line) in cases + authorityCases {
            let (status, output) = try await ServerProcess.run(
                executable: executable, arguments: ["--port", "0", "--in-memory"] + arguments,
                environment: environment)
            let lines = ServerCommandTests.lines(output)
            #expect(status == 1, "\(arguments) \(environment)")
            #expect(lines.last == "canopy-server: \(line)", "\(arguments) \(environment): \(output)")
            #expect(lines.filter { $0.hasPrefix("canopy-server:") }.count == 1, "\(output)")
            #expect(!output.contains("development server"), "a server that does not start says only why: \(output)")
        }
    }

    @Test(
        arguments: [
            (
                ["--tls-cert-file", "/a.crt"], [:],
                "--tls-cert-file (CANOPY_TLS_CERT_FILE) needs --tls-key-file (CANOPY_TLS_KEY_FILE): give both or neither"
            ),
            (
                [], ["CANOPY_TLS_KEY_FILE": "/a.key"],
                "--tls-key-file (CANOPY_TLS_KEY_FILE) needs --tls-cert-file (CANOPY_TLS_CERT_FILE): give both or neither"
            ),
        ] as [([String], [String: String], String)])
    func onlyOneOfThePairIsRefused(arguments: [String], environment: [String: String], message: String) async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--in-memory"] + arguments, environment: environment)
        #expect(status == 64)
        #expect(ServerCommandTests.lines(output).first == "Error: \(message)", "\(output)")
    }

    /// A certificate that expires within 14 days is served, with a warning.
    @Test func aCertificateExpiringSoonIsServedWithAWarning() async throws {
        try await Self.withTLSProcess(validFor: 3 * 24 * 3600) { server, authority, _ in
            let tls = try authority.clientConfiguration()
            _ = try await TLSProbe.handshake(port: server.port, configuration: tls)
            let warning = ServerCommandTests.lines(server.log).filter { $0.contains("expires within 14 days") }
            #expect(warning.count == 1, "\(server.log)")
        }
    }

    /// `SIGHUP` serves the renewed pair to new connections; one opened before keeps working. A
    /// pair that cannot be served is refused with one log line and the current one kept.
    @Test func sighupServesTheRenewedPair() async throws {
        try await Self.withTLSProcess { server, authority, folder in
            let tls = try authority.clientConfiguration()
            let endpoint = RealtimeEndpoint(host: "localhost", port: server.port, secure: true, namespace: "test")
            let old = try await RealtimeClient.connect(
                to: endpoint, tlsConfiguration: tls, logger: TestServer.makeLogger())
            var messages = old.messages.makeAsyncIterator()

            let renewed = try authority.issue()
            try renewed.write(to: folder)
            kill(server.pid, SIGHUP)
            #expect(
                await eventually {
                    try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint
                        == renewed.fingerprint
                })
            #expect(server.log.contains("serving a renewed TLS certificate"), "\(server.log)")
            _ = old.send(.request(ClientRequest(number: 1, action: .put(path: "/still", data: .bool(true), hash: nil))))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)

            try authority.issue().withKey(of: try authority.issue()).write(to: folder)
            kill(server.pid, SIGHUP)
            #expect(await eventually { server.log.contains("refused the new TLS certificate") })
            let refusals = ServerCommandTests.lines(server.log).filter {
                $0.contains("refused the new TLS certificate")
            }
            #expect(refusals.count == 1, "\(server.log)")
            #expect(refusals.first?.contains("is not the key of the certificate") == true, "\(server.log)")
            #expect(
                try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint == renewed.fingerprint)
            old.close()
        }
    }

    /// The periodic check refuses a pair that cannot be served with one log line however many times
    /// it reads it, and serves the next good pair.
    @Test func theFileCheckRefusesABadPairOnce() async throws {
        try await Self.withTLSProcess(checkInterval: "0.1") { server, authority, folder in
            let tls = try authority.clientConfiguration()
            try authority.issue().withKey(of: try authority.issue()).write(to: folder)
            #expect(await eventually { server.log.contains("refused the new TLS certificate") })
            let renewed = try authority.issue()
            try renewed.write(to: folder)
            #expect(
                await eventually {
                    try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint
                        == renewed.fingerprint
                })
            let refusals = ServerCommandTests.lines(server.log).filter {
                $0.contains("refused the new TLS certificate")
            }
            #expect(refusals.count == 1, "\(server.log)")
        }
    }

    static func withTLSProcess(
        validFor: TimeInterval = 90 * 24 * 3600, checkInterval: String = "3600",
        _ body: (ServerProcess, TestCertificateAuthority, String) async throws -> Void
    ) async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let files = try authority.issue(notValidAfter: Date() + validFor).write(to: folder)
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder + "/data",
            arguments: [
                "--tls-cert-file", files.certificate, "--tls-key-file", files.key, "--tls-check-interval",
                checkInterval,
            ])
        do {
            try await body(server, authority, folder)
        } catch {
            await server.terminate()
            throw error
        }
        await server.terminate()
    }
}
