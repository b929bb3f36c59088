import ArgumentParser
import NIOHTTP1
import Tree

/// `canopy remove PATH`: deletes the value at a path.
struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove the value at a path (and everything below it).",
        discussion: """
            Prints nothing; removing a path that holds no data is not an error.

            Examples:
              canopy remove users/ada
              canopy remove sessions --token owner
            """)

    @Argument(help: "The location, such as users/ada (/ removes everything).")
    var path: String

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.writableArgument(path)
        _ = try await connection.withREST { rest in
            try await rest.answer(.DELETE, .data(location), parameters: [("print", "silent")])
        }
    }
}
