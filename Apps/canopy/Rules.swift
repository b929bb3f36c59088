import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import Tree

/// `canopy rules get|set`: the security rules document (`/.settings/rules.json`).
struct Rules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Print or replace the security rules document.",
        discussion: """
            Examples:
              canopy rules get --token "$ADMIN_SECRET" > rules.json
              canopy rules set @rules.json --token "$ADMIN_SECRET"
              canopy rules set '{"rules": {".read": true, ".write": "auth != null"}}' --token owner
            """,
        subcommands: [Show.self, Replace.self])

    /// `canopy rules get`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Print the rules document (needs the admin token).",
            discussion: """
                Examples:
                  canopy rules get --token "$ADMIN_SECRET"
                  canopy rules get --token owner --json > rules.json     # a local server without credentials
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
            abstract: "Replace the rules document (needs the admin token).",
            discussion: """
                DOCUMENT is a rules document (JSON with a "rules" object; // and /* */ comments are \
                allowed): inline, @FILE, or - for stdin. A document the server refuses is reported \
                with its line, column and reason. Once set, prints one line saying where (with --json, \
                one JSON object: {"rules": "set", "server": …, "namespace": …, "bytes": …}).

                Examples:
                  canopy rules set @database.rules.json --token "$ADMIN_SECRET"
                  canopy rules set '{"rules": {".read": true, ".write": false}}' --token owner   # a local server without credentials
                """)

        @Argument(help: "The rules document: JSON text, @FILE, or - for stdin.")
        var document: String

        @Flag(help: "Print what was set as one JSON object instead of a line.")
        var json = false

        @OptionGroup(title: "Server")
        var connection: ConnectionOptions

        func run() async throws {
            // Sent as written: the server parses it (comments allowed) and says where it is wrong.
            let input = try ValueInput(document, what: "the rules document", parse: false)
            _ = try await connection.withREST { rest in
                try await rest.answer(.PUT, .rules, body: ByteBuffer(bytes: input.bytes))
            }
            let (server, namespace) = try connection.endpoint()
            let standardOutput = OutputFile()
            if json {
                let name = namespace.map { JSONPrinter.quoted($0) } ?? "null"
                try standardOutput.write(
                    #"{"bytes":\#(input.bytes.count),"namespace":\#(name),"rules":"set","server":"#
                        + JSONPrinter.quoted(server) + "}\n")
            } else {
                let place = namespace.map { "namespace \($0)" } ?? "the server's default namespace"
                try standardOutput.write(
                    "Rules set for \(place) at \(server) (\(ByteCount(input.bytes.count))).\n")
            }
            try standardOutput.flush()
        }
    }
}
