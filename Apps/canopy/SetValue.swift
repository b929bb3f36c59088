import ArgumentParser
import NIOCore
import NIOHTTP1
import Tree

/// `canopy set PATH VALUE`: replaces the value at a path.
struct SetValue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Replace the value at a path.",
        discussion: """
            VALUE is JSON: inline, @FILE for a file, or - for stdin (at most 16 MB; use 'canopy import' for \
            more). null removes the value. Prints nothing.

            Examples:
              canopy set users/ada '{"name": "Ada", "score": 36}'
              canopy set users/ada/name '"Ada Lovelace"'
              canopy set config @config.json
              echo 42 | canopy set counters/visits -
            """)

    @Argument(help: "The location, such as users/ada.")
    var path: String

    @Argument(help: "The value: JSON text, @FILE, or - for stdin.")
    var value: String

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.writableArgument(path)
        let input = try ValueInput(value)
        _ = try await connection.withREST { rest in
            try await rest.answer(
                .PUT, .data(location), parameters: [("print", "silent")], body: ByteBuffer(bytes: input.bytes))
        }
    }
}
