import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// `canopy-load` against a server that serves TLS: writes, fan-out and a reconnect storm go over
/// `wss://` and `https://`, trusting the server's CA (`--tls-ca-file`), or the throwaway one the tool
/// makes for a server it launches (`--launch --tls`).
@Suite(.timeLimit(.minutes(2)))
struct CanopyLoadTLSTests {
    @Test func writesAndFanoutOverTLSWithACAFile() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let authorityFile = try authority.writeCertificate(to: folder)
        let files = try authority.issue().write(to: folder)
        try await withTestServer(configure: { $0.tls = TLSFiles(certificate: files.certificate, key: files.key) }) {
            server in
            let (writesStatus, writes, writesLog) = try await CanopyLoad.run([
                "writes", "--server", "127.0.0.1:\(server.port)", "--tls-ca-file", authorityFile, "--connections", "3",
                "--pipeline", "4", "--duration", "0.5", "--json",
            ])
            #expect(writesStatus == 0, "\(writesLog)")
            let canopy = try #require(writes["canopy"] as? [String: Any], "\(writesLog)")
            #expect((canopy["ackedWrites"] as? Int ?? 0) >= 12, "\(canopy)")
            #expect(canopy["connectionsClosedEarly"] as? Int == 0, "\(canopy)")

            let (fanoutStatus, fanout, fanoutLog) = try await CanopyLoad.run([
                "fanout", "--server", "127.0.0.1:\(server.port)", "--tls-ca-file", authorityFile, "--listeners", "10",
                "--rate", "20", "--duration", "1", "--json",
            ])
            #expect(fanoutStatus == 0, "\(fanoutLog)")
            let events = try #require(fanout["canopy"] as? [String: Any], "\(fanoutLog)")
            #expect(events["events"] as? Int == 200, "\(events)")
        }
    }

    @Test func aStormAgainstALaunchedTLSServerBringsEveryClientBack() async throws {
        let port = try TestServer.reservePort()
        let (status, report, log) = try await CanopyLoad.run([
            "storm", "--launch", "--tls", "--server", "127.0.0.1:\(port)", "--clients", "20", "--restart", "kill",
            "--timeout", "30", "--json",
        ])
        #expect(status == 0, "\(log)")
        #expect(report["allBack"] as? Bool == true, "\(log)")
        let round = try #require((report["rounds"] as? [[String: Any]])?.first, "\(log)")
        #expect(round["back"] as? Int == 20, "\(round)")
        #expect(log.contains("TLS with a throwaway certificate"), "\(log)")
    }
}
