import ArgumentParser
import NIOCore
import NIOHTTP1
import Tree

/// `canopy update PATH VALUE`: a multi-path update below a path.
struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Write several children at once (a multi-path update).",
        discussion: """
            VALUE is a JSON object whose keys are paths relative to PATH; each is replaced by its value and \
            null removes it; children not named are kept. Inline, @FILE, or - for stdin. Prints nothing.

            Examples:
              canopy update users/ada '{"score": 37, "last_seen": 1700000000000}'
              canopy update / '{"users/ada/score": 37, "scores/ada": 37}'
              canopy update users @changes.json
            """)

    @Argument(help: "The location the keys are relative to.")
    var path: String

    @Argument(help: "A JSON object of relative paths and values: JSON text, @FILE, or - for stdin.")
    var value: String

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.writableArgument(path)
        let input = try ValueInput(value)
        guard case .object = input.value else {
            throw CLIError.invalidInput(
                "an update needs a JSON object of paths and values, such as '{\"score\": 37}'; to replace the "
                    + "value use 'canopy set'")
        }
        _ = try await connection.withREST { rest in
            try await rest.answer(
                .PATCH, .data(location), parameters: [("print", "silent")], body: ByteBuffer(bytes: input.bytes))
        }
    }
}
