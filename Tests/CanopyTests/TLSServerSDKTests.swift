import CanopyServer
import CanopyTesting
import Foundation
import Testing

@testable import Canopy

/// The SDK against a `canopy-server` serving TLS itself (no proxy): `https://` database URL,
/// the server's private CA given with `serverTrust`, and the realtime protocol over `wss://`.
@Suite(.timeLimit(.minutes(3)))
struct TLSServerSDKTests {
    @Test func setListenQueryAndOnDisconnectOverWSS() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let files = try authority.issue().write(to: folder)
        let caFile = try authority.writeCertificate(to: folder)
        try await withServer(configure: { $0.tls = TLSFiles(certificate: files.certificate, key: files.key) }) {
            server in
            let url = "https://localhost:\(server.port)?ns=tls"
            let database = Database(url: url, connector: nil)
            database.serverTrust = try .addingCertificateAuthorities(pemFile: URL(fileURLWithPath: caFile))
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

            // A second client, on its own connection, sees the first one's onDisconnect write.
            let watcher = Database(url: url, connector: nil)
            watcher.serverTrust = try .addingCertificateAuthorities(pemFile: URL(fileURLWithPath: caFile))
            watcher.networkPathMonitor = nil
            defer { watcher.goOffline() }
            let status = Recorder<String>()
            watcher.reference(withPath: "status").observe(.value) { status.record("\($0.value ?? "nil")") }
            try await database.reference(withPath: "status").setValue("online")
            try await database.reference(withPath: "status").onDisconnectSetValue("gone")
            #expect(await status.wait { $0.last == "online" }, "\(status.all)")
            database.goOffline()
            #expect(await status.wait { $0.last == "gone" }, "\(status.all)")
        }
    }
}
