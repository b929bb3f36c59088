import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

/// `canopy-load` against a server whose rules refuse it: each scenario that talks to the server
/// counts the refused answers by status, says what was refused, and exits with status 77 instead
/// of reporting refusals as throughput; with a token the rules allow (`--token` or `CANOPY_TOKEN`)
/// the same run does its work. Nothing listening is said in one line (exit status 69). Behaviour
/// only: no timing is asserted.
@Suite(.timeLimit(.minutes(2)), .enabled(if: CanopyLoad.executable != nil, "needs canopy-load"))
struct CanopyLoadRefusalTests {
    /// Everything needs a signed-in user, except writes below `load/w1`; user `writer` may write
    /// but not read.
    static let rules = """
        {"rules": {
          ".read": "auth != null && auth.uid != 'writer'", ".write": "auth != null",
          "load": {"w1": {".write": true}}
        }}
        """

    /// A server with ``rules``, HS256 tokens of ``SignedTokens/secret`` and an admin secret, not in
    /// emulator mode.
    static func withDenyingServer(_ body: (TestServer) async throws -> Void) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rulesFile = folder + "/rules.json"
        try rules.write(toFile: rulesFile, atomically: true, encoding: .utf8)
        try await withTestServer(dataDirectory: folder + "/data") { configuration in
            configuration.rulesFile = rulesFile
            configuration.authentication.sharedSecret = SignedTokens.secret
            configuration.authentication.adminSecret = SignedTokens.adminSecret
            configuration.authentication.isEmulator = false
        } _: { server in
            try await body(server)
        }
    }

    /// The process id of the in-process test server, for the scenarios that read its memory.
    static var ownPid: String { String(ProcessInfo.processInfo.processIdentifier) }

    /// The `refusals` of a failed run's JSON object, which must name what was refused.
    static func refusals(_ report: [String: Any], of what: String) -> [String: Int] {
        #expect(report["refused"] as? String == what, "\(report)")
        return report["refusals"] as? [String: Int] ?? [:]
    }

    @Test func writesCountsOnlyAcknowledgedWritesAndExitsWithTheRefusals() async throws {
        try await Self.withDenyingServer { server in
            let arguments = [
                "writes", "--server", "127.0.0.1:\(server.port)", "--pipeline", "4", "--duration", "0.5", "--json",
            ]
            // Only connection 1's writes (load/w1) are allowed without a token.
            let (status, report, log) = try await CanopyLoad.run(arguments + ["--connections", "3"])
            #expect(status == 77, "\(log)")
            let canopy = try #require(report["canopy"] as? [String: Any], "\(log)")
            let acked = try #require(canopy["ackedWrites"] as? Int, "\(canopy)")
            let refused = try #require(canopy["refusedWrites"] as? [String: Int], "\(canopy)")
            #expect(acked > 0, "\(canopy)")
            #expect((refused["permission_denied"] ?? 0) >= 8, "connections 0 and 2 were refused: \(canopy)")
            #expect(canopy["refused"] as? Int == refused.values.reduce(0, +), "\(canopy)")
            #expect(log.contains("refused writes: "), "\(log)")
            #expect(log.contains("canopy-load: 127.0.0.1:\(server.port) refused "), "\(log)")
            #expect(log.contains("permission_denied"), "\(log)")
            let stored = try await server.http(
                .GET, "/load.json?ns=load&shallow=true",
                headers: [("Authorization", "Bearer \(SignedTokens.adminSecret)")])
            #expect(stored.json == ["w1": true], "only the allowed writes were stored: \(stored.body)")

            // Every write refused: nothing measured, said so.
            let (deniedStatus, denied, deniedLog) = try await CanopyLoad.run(arguments + ["--connections", "1"])
            #expect(deniedStatus == 77, "\(deniedLog)")
            let figures = try #require(denied["canopy"] as? [String: Any], "\(deniedLog)")
            #expect(figures["ackedWrites"] as? Int == 0, "\(figures)")
            #expect(figures["writesPerSecond"] as? Double == 0, "\(figures)")
            #expect(deniedLog.contains("refused every one of the"), "\(deniedLog)")

            // With a token the rules allow, from --token or CANOPY_TOKEN, every write is acknowledged.
            let token = try await SignedTokens.token(uid: "load")
            for (extra, environment) in [(["--token", token], [:]), ([], ["CANOPY_TOKEN": token])] {
                let (allowedStatus, allowed, allowedLog) = try await CanopyLoad.run(
                    arguments + ["--connections", "3"] + extra, environment: environment)
                #expect(allowedStatus == 0, "\(allowedLog)")
                let result = try #require(allowed["canopy"] as? [String: Any], "\(allowedLog)")
                #expect((result["ackedWrites"] as? Int ?? 0) >= 12, "\(result)")
                #expect(result["refused"] as? Int == 0, "\(result)")
            }
        }
    }

    @Test func aTokenTheServerRefusesEndsTheRunAtOnce() async throws {
        try await Self.withDenyingServer { server in
            for arguments in [
                ["writes", "--connections", "2", "--duration", "0.5"],
                ["idle", "--connections", "2", "--server-pid", Self.ownPid],
            ] {
                let (status, report, log) = try await CanopyLoad.run(
                    arguments + ["--server", "127.0.0.1:\(server.port)", "--token", "not-a-token", "--json"])
                #expect(status == 77, "\(log)")
                #expect(report["exitStatus"] as? Int == 77, "\(report)")
                #expect(
                    log.contains("canopy-load: 127.0.0.1:\(server.port) refused the token (invalid_token"), "\(log)")
            }
        }
    }

    @Test func fanoutEndsAtOnceWhenItsListensAreRefusedAndWorksWithAToken() async throws {
        try await Self.withDenyingServer { server in
            let arguments = [
                "fanout", "--server", "127.0.0.1:\(server.port)", "--listeners", "5", "--rate", "20", "--duration",
                "1", "--json",
            ]
            let (status, report, log) = try await CanopyLoad.run(arguments)
            #expect(status == 77, "\(log)")
            #expect(report["scenario"] as? String == "fanout", "\(report)")
            #expect((Self.refusals(report, of: "listens")["permission_denied"] ?? 0) > 0, "\(report)")
            #expect(log.contains("canopy-load: 127.0.0.1:\(server.port) refused every one of the"), "\(log)")
            #expect(log.contains("--token"), "the message says what to do: \(log)")

            let token = try await SignedTokens.token(uid: "fan")
            let (allowedStatus, allowed, allowedLog) = try await CanopyLoad.run(arguments + ["--token", token])
            #expect(allowedStatus == 0, "\(allowedLog)")
            let canopy = try #require(allowed["canopy"] as? [String: Any], "\(allowedLog)")
            #expect(canopy["events"] as? Int == 100, "\(canopy)")
        }
    }

    @Test func stormIsRefusedItsDataAndComesBackWithAToken() async throws {
        try await Self.withDenyingServer { server in
            let arguments = [
                "storm", "--server", "127.0.0.1:\(server.port)", "--clients", "5", "--cut", "--timeout", "30", "--json",
            ]
            let (status, report, log) = try await CanopyLoad.run(arguments)
            #expect(status == 77, "\(log)")
            #expect(report["exitStatus"] as? Int == 77, "\(report)")
            #expect(log.contains("refused PUT /storm (HTTP 401"), "\(log)")

            let (allowedStatus, allowed, allowedLog) = try await CanopyLoad.run(
                arguments + ["--token", SignedTokens.adminSecret])
            #expect(allowedStatus == 0, "\(allowedLog)")
            #expect(allowed["allBack"] as? Bool == true, "\(allowedLog)")
        }
    }

    @Test func stormEndsAtOnceWhenItsListensAreRefused() async throws {
        try await Self.withDenyingServer { server in
            // The seed write is allowed, the listens are not.
            let (status, report, log) = try await CanopyLoad.run([
                "storm", "--server", "127.0.0.1:\(server.port)", "--clients", "5", "--cut", "--timeout", "30",
                "--token", try await SignedTokens.token(uid: "writer"), "--json",
            ])
            #expect(status == 77, "\(log)")
            #expect((Self.refusals(report, of: "listens")["permission_denied"] ?? 0) > 0, "\(report)")
        }
    }

    @Test func listenFloodEndsAtOnceWhenItsWriterIsRefusedAndWorksWithAToken() async throws {
        try await Self.withDenyingServer { server in
            let arguments = [
                "listen-flood", "--server", "127.0.0.1:\(server.port)", "--server-pid", Self.ownPid, "--listens", "20",
                "--baseline-seconds", "0.5", "--json",
            ]
            let (status, report, log) = try await CanopyLoad.run(arguments)
            #expect(status == 77, "\(log)")
            #expect(report["exitStatus"] as? Int == 77, "\(report)")
            #expect(log.contains("refused PUT /load/other (HTTP 401"), "\(log)")

            // The reader is refused: nothing to compare the flood with.
            let writer = try await SignedTokens.token(uid: "writer")
            let (readStatus, readReport, readLog) = try await CanopyLoad.run(arguments + ["--token", writer])
            #expect(readStatus == 77, "\(readLog)")
            #expect((Self.refusals(readReport, of: "reads")["permission_denied"] ?? 0) > 0, "\(readReport)")

            let token = try await SignedTokens.token(uid: "flood")
            let (allowedStatus, allowed, allowedLog) = try await CanopyLoad.run(arguments + ["--token", token])
            #expect(allowedStatus == 0, "\(allowedLog)")
            #expect(allowed["ok"] as? Int == 20, "\(allowedLog)")
            #expect(allowed["writeFailures"] as? Int == 0 && allowed["readFailures"] as? Int == 0, "\(allowedLog)")
        }
    }

    @Test func windowEndsAtOnceWhenItsWritesAreRefusedAndWorksWithAToken() async throws {
        try await Self.withDenyingServer { server in
            let arguments = [
                "window", "--server", "127.0.0.1:\(server.port)", "--children", "30", "--window", "5", "--rate", "20",
                "--duration", "0.5",
            ]
            let (status, _, log) = try await CanopyLoad.launch(arguments)
            #expect(status == 77, "\(log)")
            #expect(
                log.contains(
                    "canopy-load: 127.0.0.1:\(server.port) refused every one of the writes (permission_denied 1, of 1 "
                        + "answered)"), "\(log)")

            let token = try await SignedTokens.token(uid: "window")
            let (allowedStatus, _, allowedLog) = try await CanopyLoad.launch(arguments + ["--token", token])
            #expect(allowedStatus == 0, "\(allowedLog)")
            #expect(allowedLog.contains("Canopy SDK: "), "\(allowedLog)")
        }
    }

    @Test func nothingListeningIsOneLineNamingTheAddress() async throws {
        let port = try TestServer.reservePort()
        for scenario in [["writes"], ["fanout"], ["storm", "--cut"], ["idle", "--server-pid", Self.ownPid]] {
            let (status, _, log) = try await CanopyLoad.launch(scenario + ["--server", "127.0.0.1:\(port)"])
            #expect(status == 69, "\(scenario): \(log)")
            let errors = log.split(separator: "\n").filter { $0.hasPrefix("canopy-load:") || $0.hasPrefix("Error") }
            #expect(
                errors == [
                    "canopy-load: cannot connect to 127.0.0.1:\(port): connection refused (is canopy-server running?)"
                ],
                "\(scenario): \(log)")
        }
    }
}
