import ArgumentParser
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy export PATH`: writes the value at a path to stdout as JSON, in pieces.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the value at a path to stdout as JSON, fetching it in pieces.",
        discussion: """
            Memory stays flat whatever the size: children are listed a page at a time (shallow reads) and \
            fetched in requests of at most --piece-size bytes, big children recursively, and the JSON is \
            written as it comes. The output is what 'canopy get PATH --json' prints (compact, keys in \
            order, array-like objects as arrays), followed by a newline; it is not a snapshot if the data \
            changes meanwhile. Priorities are not included.

            On a terminal, stderr shows the progress: bytes and rate; and when the location's children fit \
            in one listing page (up to 1,000), how many are written, with the time left estimated from \
            that (as if they were of one size).

            Examples:
              canopy export / > backup.json
              canopy export users --token owner | gzip > users.json.gz
              canopy export backup > copy.json && cmp <(canopy get backup --json) copy.json
            """)

    @Argument(help: "The location to export, such as users (/ is the root).")
    var path: String

    @Option(help: "Largest answer fetched in one request, in bytes.")
    var pieceSize = 4 * 1024 * 1024

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func validate() throws {
        guard pieceSize >= 64 * 1024 else { throw ValidationError("--piece-size must be at least 65536 bytes") }
    }

    func run() async throws {
        let location = try Path.argument(path)
        let output = OutputFile()
        // No progress line when the JSON itself goes to the terminal.
        let progress = Progress("Exporting", total: nil, enabled: isatty(STDERR_FILENO) == 1 && !output.isTerminal)
        let requests = try await connection.withREST { rest in
            let exporter = Exporter(rest: rest, output: output, budget: pieceSize, progress: progress)
            do throws(CLIError) {
                try await exporter.export(location)
                try output.write("\n")
                try output.flush()
            } catch {
                progress.finish(nil)
                throw error.adding("the export stopped after \(ByteCount(output.count))")
            }
            return exporter.requests
        }
        progress.finish(
            "Exported \(ByteCount(output.count)) from \(location) in \(Progress.elapsed(progress.elapsed)) "
                + "(\(progress.rate), \(requests) requests)")
    }
}
