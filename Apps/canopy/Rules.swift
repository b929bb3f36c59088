import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import Tree

/// `canopy rules get|set`: the security rules document (`/.settings/rules.json`).
struct Rules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print or replace the security rules document.",
        discussion: """
            Examples:
              canopy rules get > rules.json
              canopy rules set @rules.json --token owner
              canopy rules set '{"rules": {".read": true, ".write": "auth != null"}}' --token owner
            """,
        subcommands: [Show.self, Replace.self])

    /// `canopy rules get`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Print the rules document.",
            discussion: """
                Examples:
                  canopy rules get
                  canopy rules get --json > rules.json
                """)

        @OptionGroup(title: "Output")
        var output: OutputOptions

        @OptionGroup(title: "Server")
        var connection: ConnectionOptions

        func run() async throws {
            let body = try await connection.withREST { rest in try await rest.answer(.GET, .rules) }
            let standardOutput = OutputFile()
            if output.isPretty, let value = try? JSONValue(parsing: Data(body.readableBytesView)) {
                try standardOutput.write(output.printer.text(value))
            } else {
                try standardOutput.write(body)
            }
            try standardOutput.write("\n")
            try standardOutput.flush()
        }
    }

    /// `canopy rules set DOCUMENT`.
    struct Replace: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Replace the rules document (needs the admin token: --token owner).",
            discussion: """
                DOCUMENT is a JSON object with a "rules" object: inline, @FILE, or - for stdin.

                Examples:
                  canopy rules set @rules.json --token owner
                  canopy rules set '{"rules": {".read": true, ".write": false}}' --token owner
                """)

        @Argument(help: "The rules document: JSON text, @FILE, or - for stdin.")
        var document: String

        @OptionGroup(title: "Server")
        var connection: ConnectionOptions

        func run() async throws {
            let input = try ValueInput(document, what: "the rules document")
            guard case .object(let members) = input.value, case .object? = members["rules"] else {
                throw CLIError.invalidInput(
                    "a rules document is a JSON object with a \"rules\" object, such as "
                        + "'{\"rules\": {\".read\": true, \".write\": true}}'")
            }
            _ = try await connection.withREST { rest in
                try await rest.answer(.PUT, .rules, body: ByteBuffer(bytes: input.bytes))
            }
        }
    }
}
