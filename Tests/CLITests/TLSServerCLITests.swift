import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// The `canopy` CLI against a `canopy-server` serving TLS itself: REST over `https://` and the
/// realtime protocol over `wss://`, trusting the server's private CA with `--ca-file`.
@Suite(.timeLimit(.minutes(3)))
struct TLSServerCLITests {
    @Test func setGetQueryAndListenOverTLS() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let files = try authority.issue().write(to: folder)
        let caFile = try authority.writeCertificate(to: folder)
        try await withTestServer(configure: { $0.tls = TLSFiles(certificate: files.certificate, key: files.key) }) {
            server in
            let url = ["--url", "https://localhost:\(server.port)?ns=cli-tls", "--ca-file", caFile]
            let set = try await CLIProcess.run(["set", "scores", #"{"ada": 36, "alan": 41, "grace": 39}"#] + url)
            #expect(set.status == 0, "\(set.stderr)")
            let get = try await CLIProcess.run(["get", "scores/ada"] + url)
            #expect(get.stdout == "36\n", "\(get.stderr)")
            let top = try await CLIProcess.run(["get", "scores", "--order-by-value", "--limit-to-last", "1"] + url)
            #expect(top.stdout.contains("alan") && !top.stdout.contains("ada"), "\(top.stdout) \(top.stderr)")

            // A listener over wss:// sees a later write.
            let listener = try CLIProcess(["listen", "scores/ada", "--event", "value"] + url)
            #expect(await listener.waitForLines { $0.contains { $0.contains("36") } }, "\(listener.stderr)")
            let change = try await CLIProcess.run(["set", "scores/ada", "37"] + url)
            #expect(change.status == 0, "\(change.stderr)")
            #expect(await listener.waitForLines { $0.contains { $0.contains("37") } }, "\(listener.stderr)")
            listener.send(SIGINT)
            try await listener.waitForExit()

            let untrusted = try await CLIProcess.run(["get", "scores/ada", "--url", "https://localhost:\(server.port)"])
            #expect(untrusted.status == 69 && untrusted.stderr.contains("certificate refused"), "\(untrusted.stderr)")
        }
    }
}
