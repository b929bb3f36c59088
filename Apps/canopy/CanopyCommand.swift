import ArgumentParser
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy`: reads, writes, watches, imports and exports a Canopy (or Firebase-compatible)
/// database from the command line.
@main
struct CanopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy",
        abstract: "Read, write, watch, import and export a Canopy database.",
        discussion: """
            Talks to the server at --url (or CANOPY_DATABASE_URL, else http://127.0.0.1:9000); the \
            namespace comes from ?ns=NAME. --token (or CANOPY_TOKEN) is sent as 'Authorization: Bearer \
            TOKEN'; 'owner' is the admin of a local server without credentials or with --emulator. Values \
            print as pretty, coloured JSON on a terminal and as compact \
            JSON when piped or with --json (NO_COLOR turns colours off). Errors are one line on stderr.

            Examples:
              canopy set users/ada '{"name": "Ada", "score": 36}'
              canopy get users --order-by-child score --limit-to-last 2
              canopy listen users
              canopy import backup/ dump.json && canopy export backup/ > copy.json
              CANOPY_DATABASE_URL='http://db.local:9000?ns=prod' canopy get /

            \(CLIError.exitCodeTable)

            Shell completions: canopy --generate-completion-script bash|zsh|fish.
            """,
        version: "0.1.0",
        subcommands: [
            Get.self, SetValue.self, Update.self, Push.self, Remove.self, Listen.self, Import.self, Export.self,
            ServerTime.self, Rules.self,
        ])

    /// Parses the command line and runs the command; a ``CLIError`` ends the process with one
    /// line on stderr and its exit code.
    static func main() async {
        MemoryTuning.returnLargeBuffersToTheSystem()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["CANOPY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .critical
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            OutputFile.printError(error.description)
            Foundation.exit(error.exitCode)
        } catch {
            exit(withError: error)
        }
    }
}
