import ArgumentParser
import Foundation

/// A scenario with `--json`, whose standard output holds one JSON object: its figures, or on a
/// failure a ``LoadFailureReport``.
protocol JSONReporting: ParsableCommand {
    var json: Bool { get }
}

extension JSONReporting {
    /// The name the scenario is run by (`writes`, `listen-flood`).
    static var scenarioName: String { configuration.commandName ?? String(describing: Self.self).lowercased() }
}

/// The `--json` object of a run that failed: what failed, the exit status, and for refusals what
/// the server refused, by status.
struct LoadFailureReport: Encodable {
    var scenario: String
    var error: String
    var exitStatus: Int32
    /// What the server refused ("writes", "listens"), with the counts by status.
    var refused: String?
    var refusals: [String: Int]?

    init(scenario: String, error: LoadError) {
        self.scenario = scenario
        self.error = error.description
        exitStatus = error.exitCode
        if case .refused(let what, let refusals, _, _) = error {
            refused = what
            self.refusals = refusals
        }
    }

    func emit() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// A failure that ends a run whose figures were already printed (and emitted with `--json`): only
/// its line and its exit status are left to give.
struct ReportedFailure: Error {
    var error: LoadError
}

extension Writes: JSONReporting {}
extension Fanout: JSONReporting {}
extension Storm: JSONReporting {}
extension Idle: JSONReporting {}
extension ListenFlood: JSONReporting {}
extension SlowReaders: JSONReporting {}
extension TreeLoad: JSONReporting {}
