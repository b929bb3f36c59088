import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import Tree

/// `canopy get PATH`: prints the value at a path, or the children a query selects.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value at a path (or the children a query selects).",
        discussion: """
            A query answers an object of the selected children; on a terminal they are listed in the \
            query's order. Bounds are JSON values, so quote strings twice. Prints null where there is no \
            data. For large data use 'canopy export'.

            Examples:
              canopy get users/ada
              canopy get / --shallow
              canopy get scores --order-by-value --limit-to-last 3
              canopy get users --order-by-child age --start-at 18 --end-before 30
              canopy get users --order-by-key --start-after '"ada"' --limit-to-first 10
              canopy get users --order-by-child name --equal-to '"Ada"' --json | jq .
            """)

    @Argument(help: "The location, such as users/ada (/ is the root).")
    var path: String

    @OptionGroup(title: "Query")
    var query: QueryOptions

    @Flag(help: "Only the keys of the children (each child shows as true; a leaf as itself).")
    var shallow = false

    @OptionGroup(title: "Output")
    var output: OutputOptions

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.argument(path)
        var parameters = query.restParameters
        if shallow { parameters.append(("shallow", "true")) }
        let body = try await connection.withREST { rest in
            try await rest.answer(.GET, .data(location), parameters: parameters)
        }
        let standardOutput = OutputFile()
        if output.isPretty, let value = try? JSONValue(parsing: Data(body.readableBytesView)) {
            try standardOutput.write(output.printer.text(value, order: Self.order(of: value, in: query.index)))
        } else {
            try standardOutput.write(body)
        }
        try standardOutput.write("\n")
        try standardOutput.flush()
    }

    /// The keys of an object in the query's order (`nil` without an ordering).
    static func order(of value: JSONValue, in index: Index?) -> [String]? {
        guard let index, case .object = value, let node = try? Node(json: value) else { return nil }
        return node.children(in: index).map(\.name.string)
    }
}
