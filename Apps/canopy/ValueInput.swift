import Foundation
import Tree

/// A JSON value given on the command line: inline (`'{"name": "Ada"}'`), from a file (`@ada.json`)
/// or from stdin (`-`).
struct ValueInput {
    /// The JSON text, as given.
    let bytes: [UInt8]
    /// The parsed value.
    let value: JSONValue

    /// The largest value `set`, `update` and `push` send (the server's default request limit).
    static let limit = 16 * 1024 * 1024

    /// Reads and parses `argument`; `what` names it in messages ("the value", "the rules"). With
    /// `parse` false the text is only read (``value`` is `null`): for documents the server parses
    /// itself, such as rules with comments.
    init(_ argument: String, what: String = "the value", parse: Bool = true) throws(CLIError) {
        let source: String
        if argument == "-" || argument.hasPrefix("@") {
            let file = try InputFile(path: argument == "-" ? "-" : String(argument.dropFirst()))
            source = file.name
            guard let bytes = try file.readAll(limit: Self.limit) else {
                throw .invalidInput(
                    "\(what) in \(source) is over \(ByteCount(Self.limit)), more than the server takes in one "
                        + "request; use 'canopy import' for large data")
            }
            self.bytes = bytes
        } else {
            source = "the command line"
            bytes = Array(argument.utf8)
        }
        guard parse else {
            value = .null
            return
        }
        do {
            value = try JSONValue(parsing: Data(bytes))
        } catch {
            var message = "\(what) in \(source) is not valid JSON (\(error))"
            if source == "the command line", let first = argument.first, first.isLetter,
                !["true", "false", "null"].contains(argument)
            {
                message += "; to write a string, quote it as JSON: '\(JSONPrinter.quoted(argument))'"
            }
            throw .invalidInput(message)
        }
    }
}
