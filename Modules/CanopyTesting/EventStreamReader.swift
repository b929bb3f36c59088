import AsyncHTTPClient
import NIOCore
import NIOHTTP1
public import Tree

/// Reads a Server-Sent Events response event by event.
///
/// ```swift
/// let stream = try await server.eventStream("/rooms.json")
/// let first = try await stream.next()          // event: put, data: {"path":"/","data":...}
/// await stream.close()
/// ```
public final class EventStreamReader: Sendable {
    /// One event: its `event:` name and its `data:` lines joined by newlines.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var data: String

        /// The data parsed as JSON, or `nil` when it is not JSON.
        public var json: JSONValue? { try? JSONValue(parsing: data) }

        public var description: String { "event: \(name) data: \(data)" }
    }

    public let status: Int
    public let headers: [(name: String, value: String)]
    private let events: Inbox<Event>
    private let task: Task<Void, Never>

    init(response: HTTPClientResponse) {
        status = Int(response.status.code)
        headers = response.headers.map { ($0.name, $0.value) }
        let events = Inbox<Event>()
        self.events = events
        task = Task {
            var parser = Parser()
            do {
                for try await chunk in response.body {
                    for event in parser.feed(Array(chunk.readableBytesView)) { events.append(event) }
                }
            } catch {}
            events.finish()
        }
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Takes the next event, waiting up to `timeout`.
    public func next(timeout: Duration = RealtimeTestClient.defaultTimeout) async throws -> Event {
        try await next(timeout: timeout) { _ in true }
    }

    /// Takes the next event that is not a `keep-alive`.
    public func nextData(timeout: Duration = RealtimeTestClient.defaultTimeout) async throws -> Event {
        try await next(timeout: timeout) { $0.name != "keep-alive" }
    }

    /// Takes the oldest event `accepts` takes, leaving others.
    public func next(
        timeout: Duration = RealtimeTestClient.defaultTimeout, where accepts: @escaping @Sendable (Event) -> Bool
    ) async throws -> Event {
        guard let event = await events.take(timeout: timeout, where: accepts) else {
            throw RealtimeTestError.timedOut("an event", connectionEnded: events.isFinished)
        }
        return event
    }

    /// Whether the server ended the stream.
    public var isFinished: Bool { events.isFinished }

    /// Drops the connection and waits for the reader to stop.
    public func close() async {
        task.cancel()
        await task.value
    }

    /// Splits bytes into lines and lines into events (the `text/event-stream` format).
    private struct Parser {
        private var pending: [UInt8] = []
        private var name = ""
        private var data: [String] = []
        private var hasFields = false

        mutating func feed(_ bytes: [UInt8]) -> [Event] {
            pending += bytes
            var output: [Event] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                var line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if line.hasSuffix("\r") { line.removeLast() }
                if let event = take(line) { output.append(event) }
            }
            return output
        }

        private mutating func take(_ line: String) -> Event? {
            if line.isEmpty {
                defer {
                    name = ""
                    data = []
                    hasFields = false
                }
                return hasFields
                    ? Event(name: name.isEmpty ? "message" : name, data: data.joined(separator: "\n")) : nil
            }
            if line.hasPrefix(":") { return nil }
            let field: Substring
            var value: Substring
            if let colon = line.firstIndex(of: ":") {
                field = line[..<colon]
                value = line[line.index(after: colon)...]
                if value.hasPrefix(" ") { value = value.dropFirst() }
            } else {
                field = line[...]
                value = ""
            }
            switch field {
            case "event": name = String(value)
            case "data": data.append(String(value))
            default: return nil
            }
            hasFields = true
            return nil
        }
    }
}
