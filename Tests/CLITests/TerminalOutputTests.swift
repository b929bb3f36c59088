import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// What `canopy` prints when its stdout or stderr is a terminal (a pseudo-terminal here): pretty,
/// coloured values, and the import and export progress lines; and `--json`, which turns the pretty
/// printing off.
@Suite(.timeLimit(.minutes(3)))
struct TerminalOutputTests {
    static let value = #"{"name": "Ada", "score": 36, "admin": true, "tags": ["x"]}"#

    /// The value as `get` prints it for people: members in key order, two spaces an indent level,
    /// each key and scalar wrapped in its colour's escape and a reset when `colour`.
    static func pretty(colour: Bool) -> String {
        func styled(_ text: String, _ code: String) -> String { colour ? "\u{1B}[\(code)m" + text + "\u{1B}[0m" : text }
        func key(_ name: String) -> String { styled("\"\(name)\"", "1;34") }
        return """
            {
              \(key("admin")): \(styled("true", "33")),
              \(key("name")): \(styled("\"Ada\"", "32")),
              \(key("score")): \(styled("36", "36")),
              \(key("tags")): [
                \(styled("\"x\"", "32"))
              ]
            }

            """
    }

    static func canopy(
        _ server: TestServer, _ arguments: [String], environment: [String: String] = [:],
        stdout: TerminalProcess.Sink = .terminal, stderr: TerminalProcess.Sink = .terminal
    ) async throws -> TerminalProcess {
        let executable = try #require(CLIProcess.executable, "the canopy executable is not built beside the tests")
        return try await TerminalProcess.run(
            executable, arguments, environment: server.cliEnvironment.merging(environment) { $1 }, stdout: stdout,
            stderr: stderr)
    }

    @Test func getOnATerminalPrintsIndentedColouredJSON() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/user.json?ns=test", body: Self.value)
            let result = try await Self.canopy(server, ["get", "user"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == Self.pretty(colour: true), "\(result.stdout.debugDescription)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        }
    }

    @Test func noColorKeepsTheIndentationWithoutEscapes() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/user.json?ns=test", body: Self.value)
            for environment in [["NO_COLOR": "1"], ["TERM": "dumb"]] {
                let result = try await Self.canopy(server, ["get", "user"], environment: environment)
                #expect(result.status == 0, "\(environment): \(result.stderr)")
                #expect(
                    result.stdout == Self.pretty(colour: false), "\(environment): \(result.stdout.debugDescription)")
            }
        }
    }

    @Test func jsonPrintsWhatTheServerSentOnOneLineOnATerminalAndPiped() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/user.json?ns=test", body: Self.value)
            let compact = try await server.http(.GET, "/user.json?ns=test").body
            #expect(compact == #"{"admin":true,"name":"Ada","score":36,"tags":["x"]}"#)

            let terminal = try await Self.canopy(server, ["get", "user", "--json"])
            #expect(terminal.status == 0, "\(terminal.stderr)")
            #expect(terminal.stdout == compact + "\n", "\(terminal.stdout.debugDescription)")

            let piped = try await server.canopy("get", "user", "--json")
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(piped.stdout == compact + "\n", "\(piped.stdout.debugDescription)")
            let pipedDefault = try await server.canopy("get", "user")
            #expect(pipedDefault.stdout == compact + "\n", "compact without --json too when piped")
        }
    }

    /// The parts of a progress stream: each drawing starts with a carriage return and an erase of the
    /// line (`\r ESC[2K`), and the summary ends with a newline.
    static func drawings(_ stderr: String) -> [String] {
        stderr.components(separatedBy: "\r\u{1B}[2K").filter { !$0.isEmpty }
    }

    @Test func importOnATerminalShowsBytesRateAndTimeLeftThenASummary() async throws {
        // 1 MB in 2 KB writes: 500 requests, so the import lasts many tenths of a second (the line
        // is redrawn at most every 0.1 s, when a 64 KB read is done) even where requests are quick.
        // On a starved machine it can last over a minute (seen once in a full run: "1m00s").
        let members = (0..<1000).map { #""c\#($0)": {"n": \#($0), "text": "\#(String(repeating: "x", count: 990))"}"# }
        let text = "{" + members.joined(separator: ", ") + "}"
        let file = try ImportExportTests.temporaryFile(text)
        defer { try? FileManager.default.removeItem(at: file) }
        let size = String(format: "%.1f", Double(text.utf8.count) / 1e6)
        try await withTestServer { server in
            let started = ContinuousClock.now
            let result = try await Self.canopy(
                server, ["import", "big", file.path, "--chunk-size", "2048"], stdout: .file)
            let took = ContinuousClock.now - started
            #expect(result.status == 0, "\(result.stderr)")
            let drawings = Self.drawings(result.stderr)
            let importing = drawings.filter { $0.hasPrefix("Importing ") }
            let withTimeLeft = try Regex(
                #"^Importing  [0-9.]+ [KM]?B / "# + size
                    + #" MB  \[#* *\] +[0-9]+%  [0-9.]+ [KM]?B/s  ETA [0-9]+s$"#)
            #expect(importing.contains { $0.wholeMatch(of: withTimeLeft) != nil }, "\(drawings)")
            let summary = try #require(drawings.last, "\(result.stderr.debugDescription)")
            let summaryFormat = try Regex(
                #"^Imported "# + size + #" MB into /big in ([0-9]\.[0-9]s|([0-9]+m)?[0-9]+s) "#
                    + #"\([0-9.]+ [KM]?B/s; [0-9]+ writes, .*\)\n$"#)
            #expect(summary.wholeMatch(of: summaryFormat) != nil, "\(summary.debugDescription)")
            if took < .seconds(9) {
                // Not "in 0s": a quick import gives its time in tenths.
                #expect(summary.contains(try Regex(#" in [0-9]\.[0-9]s \("#)), "\(summary.debugDescription)")
            }
        }
    }

    /// Children of about `bytes` each, under `/exported`.
    static func putChildren(_ count: Int, bytes: Int, on server: TestServer) async throws {
        let members = (0..<count).map { #""c\#($0)": "\#(String(repeating: "y", count: bytes))""# }
        let put = try await server.http(
            .PUT, "/exported.json?ns=test&print=silent", body: "{" + members.joined(separator: ",") + "}")
        #expect(put.status == 204)
    }

    @Test func exportOfChildrenInOnePageShowsHowManyAreWrittenAndTimeLeft() async throws {
        try await withTestServer { server in
            // 900 children of 8 KB (one listing page) fetched in pieces of 64 KB: over 200 requests,
            // so the line is redrawn part-way (at most every 0.1 s) even where requests are quick.
            try await Self.putChildren(900, bytes: 8000, on: server)
            let result = try await Self.canopy(
                server, ["export", "exported", "--piece-size", "65536"], stdout: .file, stderr: .terminal)
            #expect(result.status == 0, "\(result.stderr)")
            let drawings = Self.drawings(result.stderr)
            let exporting = drawings.filter { $0.hasPrefix("Exporting ") }
            let partWay = try Regex(
                #"^Exporting  [0-9.]+ [KM]?B  ([0-9]+) / 900 children  "#
                    + #"\[#* *\] +[0-9]+%  [0-9.]+ [KM]?B/s  ETA [0-9]+s$"#)
            let counts = exporting.compactMap { try? partWay.wholeMatch(in: $0)?.output[1].substring }
            #expect(counts.contains { (Int($0) ?? 0) > 0 }, "\(drawings)")
            let summary = try #require(drawings.last, "\(result.stderr.debugDescription)")
            #expect(summary.hasPrefix("Exported 7.2 MB from /exported in "), "\(summary.debugDescription)")
            #expect(summary.hasSuffix(" requests)\n"), "\(summary.debugDescription)")
        }
    }

    @Test func exportOfMoreChildrenThanOnePageShowsBytesAndRateOnly() async throws {
        try await withTestServer { server in
            // More keys than a listing page holds (1,000): their number is not known ahead.
            try await Self.putChildren(1200, bytes: 10, on: server)
            let result = try await Self.canopy(server, ["export", "exported"], stdout: .file, stderr: .terminal)
            #expect(result.status == 0, "\(result.stderr)")
            let drawings = Self.drawings(result.stderr)
            let exporting = drawings.filter { $0.hasPrefix("Exporting ") }
            // The first update draws at once: there is at least one.
            #expect(!exporting.isEmpty, "\(drawings)")
            let bytesAndRate = try Regex(#"^Exporting  [0-9.]+ [KM]?B  [0-9.]+ [KM]?B/s$"#)
            #expect(exporting.allSatisfy { $0.wholeMatch(of: bytesAndRate) != nil }, "\(exporting)")
            #expect(drawings.last?.hasPrefix("Exported ") == true, "\(drawings)")
        }
    }
}
