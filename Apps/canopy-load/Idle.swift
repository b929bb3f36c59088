import ArgumentParser
import Foundation
import Synchronization

/// Server memory per idle connection.
struct Idle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Server memory per idle connection (reads the server's RSS).",
        discussion: """
            Opens one warm-up connection (so that state the server creates once does not count), reads \
            the server's resident memory (VmRSS in /proc/<pid>/status), opens --connections more and \
            waits for each one's hello, then reads it again two seconds later. Needs the server's pid: \
            --launch, or --server-pid for a server started otherwise.
            """)

    @OptionGroup var options: ServerOptions
    @OptionGroup var launchOptions: LaunchOptions
    @Option(help: "Idle connections to open.") var connections = 1000
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    func validate() throws {
        guard connections > 0 else { throw ValidationError("--connections must be positive") }
        try launchOptions.validateServerProcess()
        _ = try options.endpoint()
    }

    func run() async throws {
        let run = try ScenarioRun(json: json, connections: connections + 1, what: "\(connections) idle connections")
        let report = try await run.withServer(options, launchOptions) { server in
            try await measure(server, machine: run.machine, console: run.console)
        }
        try run.report(report)
    }

    private func measure(
        _ server: ServersUnderLoad, machine: MachineInfo, console: Console
    ) async throws -> IdleReport {
        let tally = Tally()
        // Warm up: one connection so lazily created server state does not count as per-connection cost.
        let warm = try await options.connect { IgnoringSession(onHello: { tally.finish(with: makeHistogram()) }) }
        await tally.waitForSessions(1)
        defer { warm.close() }
        try await Task.sleep(for: .seconds(1))
        let before = try server.residentBytes()
        console.line("idle: opening \(connections) connections to \(options.server)")
        let started = monotonicNanoseconds()
        let connections = connections
        let open = try await console.withProgress({
            "idle: \(tally.sessionsDone.load(ordering: .relaxed) - 1) of \(connections) connections greeted"
        }) {
            let open = try await connectAll(connections, options: options) { _ in
                IgnoringSession(onHello: { tally.finish(with: makeHistogram()) })
            }
            await tally.waitForSessions(connections)
            return open
        }
        defer { for connection in open { connection.close() } }
        let connectSeconds = Double(monotonicNanoseconds() - started) / 1e9
        try await Task.sleep(for: .seconds(2))
        let after = try server.residentBytes()
        return IdleReport(
            scenario: "idle", server: options.server, connections: connections, machine: machine,
            connectSeconds: connectSeconds, rssBeforeBytes: before, rssAfterBytes: after,
            bytesPerConnection: Double(after - before) / Double(connections))
    }
}

/// The `--json` object of an `idle` run.
struct IdleReport: ScenarioReport {
    var scenario: String
    var server: String
    var connections: Int
    var machine: MachineInfo
    /// From the first connection's start until every connection was greeted.
    var connectSeconds: Double
    var rssBeforeBytes: Int
    var rssAfterBytes: Int
    var bytesPerConnection: Double

    func describe() -> [String] {
        [
            String(
                format: "idle connections: %d, server RSS %.1f MB → %.1f MB: %.1f KB per connection", connections,
                Double(rssBeforeBytes) / 1e6, Double(rssAfterBytes) / 1e6, bytesPerConnection / 1024)
        ]
    }
}
