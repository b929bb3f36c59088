import ArgumentParser
import Canopy
import Foundation

/// `canopy server-time`: the server's clock, as the SDK measures it.
struct ServerTime: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server-time",
        abstract: "Print the server's time in milliseconds since 1970.",
        discussion: """
            Connects through the realtime protocol and reads .info/serverTimeOffset, the difference \
            between the server's clock and this machine's, measured when the connection opened. On a \
            terminal the time is also shown as a date with the offset; piped or with --json, only the \
            number is printed.

            Examples:
              canopy server-time
              canopy server-time --json
            """)

    @OptionGroup(title: "Output")
    var output: OutputOptions

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let session = try await RealtimeSession.connect(connection)
        let snapshot: DataSnapshot
        do {
            snapshot = try await session.database.reference(withPath: ".info/serverTimeOffset").getData()
        } catch {
            throw CLIError.failed("could not read .info/serverTimeOffset: \(error)")
        }
        let offset = (snapshot.value as? Double) ?? 0
        let now = Date()
        let serverTime = (now.timeIntervalSince1970 * 1000 + offset).rounded()
        let standardOutput = OutputFile()
        if output.isPretty {
            let date = Date(timeIntervalSince1970: serverTime / 1000)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let shown = String(format: "%+.0f", offset)
            try standardOutput.write("\(Int64(serverTime))  \(formatter.string(from: date))  (offset \(shown) ms)\n")
        } else {
            try standardOutput.write("\(Int64(serverTime))\n")
        }
        try standardOutput.flush()
    }
}
