import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// `canopy-load` as a person runs it: its live progress line on a terminal, `--json` on a terminal,
/// and the fan-out scenario beside Redis pub/sub (`--baseline redis`). (The scenarios' figures are
/// checked in `Tests/EndToEndTests/CanopyLoadTests.swift`; these run the binary on pseudo-terminals
/// with ``TerminalProcess``, which lives here.) Behaviour only: no timing is asserted.
@Suite(.timeLimit(.minutes(2)))
struct CanopyLoadOutputTests {
    /// The `canopy-load` binary built with the tests.
    static let executable = BuiltExecutable.locate("canopy-load")

    /// `redis-server` on `PATH`, as `canopy-load` looks for it.
    static let redisServer: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/redis-server" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }()

    static func canopyLoad(
        _ arguments: [String], stdout: TerminalProcess.Sink = .terminal, stderr: TerminalProcess.Sink = .terminal
    ) async throws -> TerminalProcess {
        let executable = try #require(Self.executable, "canopy-load is not built beside the tests")
        return try await TerminalProcess.run(
            executable, arguments, stdout: stdout, stderr: stderr, timeout: .seconds(90))
    }

    /// A drawing of the fan-out's progress line while it writes, as `FanoutDriver` formats it.
    static var writingProgress: Regex<Substring> {
        #/canopy: [0-9]+\.[0-9] s, [0-9]+ of 200 events \([0-9]+/s\), [0-9]+ listeners done/#
    }

    /// The pieces of a console stream: a progress drawing, or the clearing of one, starts with a
    /// carriage return and an erase to the end of the line (`\r ESC[K`).
    static func pieces(_ text: String) -> [String] {
        text.components(separatedBy: "\r\u{1B}[K").filter { !$0.isEmpty }
    }

    @Test func withoutJSONOnATerminalProgressIsOneLineRewrittenInPlace() async throws {
        try await withTestServer { server in
            let result = try await Self.canopyLoad([
                "fanout", "--server", "127.0.0.1:\(server.port)", "--listeners", "10", "--rate", "20", "--duration",
                "1",
            ])
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            let pieces = Self.pieces(result.stdout)
            // Drawn while writing, each in place: no newline after it, the next piece clears it.
            let drawings = pieces.filter { $0.wholeMatch(of: Self.writingProgress) != nil }
            #expect(!drawings.isEmpty, "\(result.stdout.debugDescription)")
            // Never as a line of its own, as it is printed when stdout is not a terminal.
            let lines = result.stdout.split(separator: "\n")
            #expect(!lines.contains { $0.wholeMatch(of: Self.writingProgress) != nil }, "\(lines)")
            #expect(result.stdout.contains("canopy: events received 200 (expected 200)"), "\(result.stdout)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        }
    }

    @Test func withJSONOnATerminalStdoutIsJustTheDocumentAndProgressGoesToStderr() async throws {
        try await withTestServer { server in
            let result = try await Self.canopyLoad([
                "fanout", "--server", "127.0.0.1:\(server.port)", "--listeners", "10", "--rate", "20", "--duration",
                "1", "--json",
            ])
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            #expect(result.stdout.hasSuffix("}\n"), "\(result.stdout.debugDescription)")
            #expect(result.stdout.dropLast().allSatisfy { $0 != "\n" && $0 != "\r" && $0 != "\u{1B}" })
            let document = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            #expect(document?["scenario"] as? String == "fanout", "\(result.stdout)")
            let canopy = document?["canopy"] as? [String: Any]
            #expect(canopy?["events"] as? Int == 200, "\(result.stdout)")
            // The lines and the progress went to stderr, a terminal too.
            #expect(Self.pieces(result.stderr).contains { $0.wholeMatch(of: Self.writingProgress) != nil })
            #expect(result.stderr.contains("canopy: events received 200 (expected 200)"), "\(result.stderr)")
        }
    }

    @Test(.enabled(if: redisServer != nil, "needs redis-server on PATH (Debian's redis-server package)"))
    func fanoutBesideRedisDeliversEveryEventOnBothAndReportsTheRatios() async throws {
        let port = try TestServer.reservePort()
        let result = try await Self.canopyLoad(
            [
                "fanout", "--launch", "--in-memory", "--server", "127.0.0.1:\(port)", "--listeners", "20", "--rate",
                "5", "--duration", "2", "--baseline", "redis", "--json",
            ], stdout: .file, stderr: .file)
        let log = result.stdout + result.stderr
        #expect(result.status == 0, "\(log)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(log)")
        for target in ["canopy", "redis"] {
            let figures = try #require(document[target] as? [String: Any], "\(target): \(log)")
            #expect(figures["target"] as? String == target, "\(figures)")
            #expect(figures["expectedEvents"] as? Int == 200, "\(target): \(figures)")
            #expect(figures["events"] as? Int == 200, "\(target): \(figures)")
            #expect(figures["listenersClosedEarly"] as? Int == 0, "\(target): \(figures)")
            #expect(figures["serverCPUSeconds"] is Double, "the tool started it, so it reads its CPU: \(figures)")
        }
        let ratio = try #require(document["ratio"] as? [String: Any], "\(log)")
        for name in ["eventsPerSecond", "p50Latency", "p99Latency"] {
            let value = try #require(ratio[name] as? Double, "\(name): \(ratio)")
            #expect(value > 0 && value.isFinite, "\(name): \(ratio)")
        }
        #expect(result.stderr.contains("canopy / redis: "), "the ratios are printed too: \(result.stderr)")
        #expect(!result.stderr.contains(": warning:"), "\(result.stderr)")
    }
}
