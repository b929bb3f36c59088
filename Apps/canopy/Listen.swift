import ArgumentParser
import Canopy
import Foundation
import Tree

/// `canopy listen PATH`: prints each event at a path (or query) until Ctrl-C.
struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Print each change at a path as it happens, until Ctrl-C.",
        discussion: """
            Listens through the realtime protocol (the Canopy SDK). Each event is one line: on a terminal \
            'EVENT KEY VALUE'; piped or with --json a JSON object per line, {"event": "child_added", "key": \
            "ada", "value": {...}} (with "previous", the key before it in the query's order, for child \
            events that have one). Existing children arrive first as child_added. A dropped connection is \
            reported on stderr and restored by itself. Ctrl-C (or SIGTERM) ends it with exit code 0.

            Examples:
              canopy listen messages
              canopy listen scores --order-by-value --limit-to-last 3
              canopy listen users/ada --event value
              canopy listen rooms/1 --json | jq -c 'select(.event == "child_added") | .value'
            """)

    /// The events `--event` can name.
    enum EventName: String, CaseIterable, ExpressibleByArgument {
        case value
        case childAdded = "child_added"
        case childChanged = "child_changed"
        case childRemoved = "child_removed"
        case childMoved = "child_moved"

        var type: DataEventType {
            switch self {
            case .value: .value
            case .childAdded: .childAdded
            case .childChanged: .childChanged
            case .childRemoved: .childRemoved
            case .childMoved: .childMoved
            }
        }
    }

    @Argument(help: "The location, such as messages (/ is the root).")
    var path: String

    @Option(
        name: .customLong("event"),
        help: "An event to print (repeat for several): value, child_added, child_changed, child_removed, child_moved.")
    var events: [EventName] = [.childAdded, .childChanged, .childRemoved, .childMoved]

    @OptionGroup(title: "Query")
    var query: QueryOptions

    @OptionGroup(title: "Output")
    var output: OutputOptions

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func run() async throws {
        let location = try Path.argument(path)
        let session = try await RealtimeSession.connect(connection)
        let printer = EventPrinter(pretty: output.isPretty, colour: output.isPretty && OutputOptions.coloursAllowed)
        let listened = query.apply(to: session.database.reference(withPath: location.wireString))
        for name in Array(Set(events)).sorted(by: { $0.type.rawValue < $1.type.rawValue }) {
            listened.observe(
                name.type,
                andPreviousSiblingKeyWith: { snapshot, previous in
                    printer.print(name.rawValue, snapshot, previous: name == .value ? nil : previous)
                },
                withCancel: { error in
                    let failure: CLIError =
                        switch error as? DatabaseError {
                        case .server(let status, let message)? where status == "permission_denied":
                            .permissionDenied("permission denied: listen \(location): \(message)")
                        case .invalidQuery?, .invalidPath?: .invalidInput("listen \(location): \(error)")
                        default: .failed("the server ended the listen at \(location): \(error)")
                        }
                    OutputFile.printError(failure.description)
                    Foundation.exit(failure.exitCode)
                })
        }
        session.reportConnectionChanges()
        _ = await RealtimeSession.waitForInterrupt()
    }
}

/// Formats one event as a line on stdout.
struct EventPrinter: Sendable {
    let pretty: Bool
    let colour: Bool

    func print(_ event: String, _ snapshot: DataSnapshot, previous: String?) {
        let value = (try? snapshot.data(as: JSONValue.self)) ?? .null
        let key = snapshot.ref.key
        let line: String
        if pretty {
            let printer = JSONPrinter(pretty: false, colour: colour)
            let name = colour ? "\u{1B}[1m\(event)\u{1B}[0m" : event
            line = "\(name) \(key ?? "/") \(printer.text(value))"
        } else {
            var members: [(String, JSONValue)] = [("event", .string(event)), ("key", key.map { .string($0) } ?? .null)]
            if let previous { members.append(("previous", .string(previous))) }
            members.append(("value", value))
            let printer = JSONPrinter(pretty: false, colour: false)
            line =
                "{" + members.map { JSONPrinter.quoted($0.0) + ":" + printer.text($0.1) }.joined(separator: ",") + "}"
        }
        OutputFile.printNow(line + "\n")
    }
}
