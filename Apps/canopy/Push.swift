import ArgumentParser
import NIOCore
import NIOHTTP1
import Tree

/// `canopy push PATH VALUE`: adds a child under a new, time-ordered key.
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Add a child with a new, time-ordered key and print the key.",
        discussion: """
            VALUE is JSON: inline, @FILE, or - for stdin. Prints the server's answer, {"name": KEY}.

            Examples:
              canopy push messages '{"from": "ada", "text": "hello"}'
              canopy push messages @message.json --json | jq -r .name
            """)

    @Argument(help: "The list to add to, such as messages.")
    var path: String

    @Argument(help: "The value: JSON text, @FILE, or - for stdin.")
    var value: String

    @OptionGroup(title: "Output")
    var output: OutputOptions

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.writableArgument(path)
        let input = try ValueInput(value)
        let body = try await connection.withREST { rest in
            try await rest.answer(.POST, .data(location), body: ByteBuffer(bytes: input.bytes))
        }
        let standardOutput = OutputFile()
        if output.isPretty, let answer = try? JSONValue(parsing: String(buffer: body)) {
            try standardOutput.write(output.printer.text(answer))
        } else {
            try standardOutput.write(body)
        }
        try standardOutput.write("\n")
        try standardOutput.flush()
    }
}
