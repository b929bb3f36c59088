public import Tree

/// A message from the server to a client.
public enum ServerMessage: Sendable, Equatable {
    /// The answer to request `number`: status `ok` or an error code, with data or a message.
    case response(number: Int, status: ResponseStatus, data: JSONValue)
    /// `d`: the data at `path` is now `data` (for the filtered query `tag`, if set).
    case overwrite(path: String, data: JSONValue, tag: Int?)
    /// `m`: each member of `data` (a relative path) is now its value.
    case merge(path: String, data: JSONValue, tag: Int?)
    /// `c`: the listen at `path` was revoked (for example permission lost).
    case listenRevoked(path: String, query: JSONValue?)
    /// `ac`: the credential was revoked.
    case authRevoked(status: ResponseStatus, reason: String)
    /// Control `h`: the first message on every connection. `extensions` (member `ext`) names the
    /// Canopy extensions the server supports, such as ``RealtimeHello/writeIDsExtension``; other
    /// clients ignore it.
    case hello(timestamp: Int64, version: String, host: String, sessionID: String, extensions: [String] = [])
    /// Control `r`: reconnect to another host.
    case reset(host: String)
    /// Control `s`: the server is going away; do not reconnect.
    case shutdown(reason: String)
    /// Control `e`: an error the connection cannot recover from.
    case error(String)
    /// Control `p`.
    case ping
    /// Control `o`: the answer to a client's ping.
    case pong

    /// A successful answer with no data.
    public static func ok(_ number: Int, data: JSONValue = "") -> ServerMessage {
        .response(number: number, status: .ok, data: data)
    }

    /// The JSON envelope of this message.
    public var json: JSONValue {
        switch self {
        case .response(let number, let status, let data):
            return ["t": "d", "d": ["r": .number(Double(number)), "b": ["s": .string(status.text), "d": data]]]
        case .overwrite(let path, let data, let tag):
            return Self.push("d", path: path, data: data, tag: tag)
        case .merge(let path, let data, let tag):
            return Self.push("m", path: path, data: data, tag: tag)
        case .listenRevoked(let path, let query):
            var body: [String: JSONValue] = ["p": .string(path)]
            if let query { body["q"] = query }
            return ["t": "d", "d": ["a": "c", "b": .object(body)]]
        case .authRevoked(let status, let reason):
            return ["t": "d", "d": ["a": "ac", "b": ["s": .string(status.text), "d": .string(reason)]]]
        case .hello(let timestamp, let version, let host, let sessionID, let extensions):
            var body: [String: JSONValue] = [
                "ts": .number(Double(timestamp)), "v": .string(version), "h": .string(host), "s": .string(sessionID),
            ]
            if !extensions.isEmpty { body["ext"] = .array(extensions.map { .string($0) }) }
            return Self.control("h", .object(body))
        case .reset(let host): return Self.control("r", .string(host))
        case .shutdown(let reason): return Self.control("s", .string(reason))
        case .error(let message): return Self.control("e", .string(message))
        case .ping: return Self.control("p", [:])
        case .pong: return Self.control("o", [:])
        }
    }

    /// The message as one JSON text (before frame splitting).
    public var text: String {
        if let number = plainAcknowledgementNumber {
            return Self.plainAcknowledgement.prefix + String(number) + Self.plainAcknowledgement.suffix
        }
        return json.serialized()
    }

    /// The text of a plain acknowledgement (`ok` with no data), by far the most frequent message,
    /// around its request number: `prefix + String(number) + suffix` (what ``text`` gives), so a
    /// writer can spell it without building the whole text first.
    public static let plainAcknowledgement = (prefix: #"{"d":{"b":{"d":"","s":"ok"},"r":"#, suffix: #"},"t":"d"}"#)

    /// The request number, when this is a plain acknowledgement.
    public var plainAcknowledgementNumber: Int? {
        if case .response(let number, .ok, .string("")) = self { return number }
        return nil
    }

    private static func push(_ action: String, path: String, data: JSONValue, tag: Int?) -> JSONValue {
        var body: [String: JSONValue] = ["p": .string(path), "d": data]
        if let tag { body["t"] = .number(Double(tag)) }
        return ["t": "d", "d": ["a": .string(action), "b": .object(body)]]
    }

    private static func control(_ command: String, _ data: JSONValue) -> JSONValue {
        ["t": "c", "d": ["t": .string(command), "d": data]]
    }
}

extension ServerMessage {
    /// Decodes a server message (what a client receives).
    public init(json: JSONValue) throws(ProtocolError) {
        guard case .object(let envelope) = json, case .string(let type)? = envelope["t"],
            case .object(let body)? = envelope["d"]
        else { throw .malformedMessage("expected {\"t\": ..., \"d\": {...}}") }
        if type == "c" {
            guard case .string(let command)? = body["t"] else { throw .malformedMessage("control without command") }
            let data = body["d"] ?? .null
            switch command {
            case "h":
                guard case .number(let timestamp)? = data["ts"] else { throw .malformedMessage("hello without ts") }
                self = .hello(
                    timestamp: Int64(timestamp), version: data["v"]?.stringValue ?? "",
                    host: data["h"]?.stringValue ?? "", sessionID: data["s"]?.stringValue ?? "",
                    extensions: data["ext"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            case "r": self = .reset(host: data.stringValue ?? "")
            case "s": self = .shutdown(reason: data.stringValue ?? "")
            case "e": self = .error(data.stringValue ?? data.serialized())
            case "p": self = .ping
            case "o": self = .pong
            default: throw .malformedMessage("unknown control command \"\(command)\"")
            }
            return
        }
        guard type == "d" else { throw .malformedMessage("unknown envelope type \"\(type)\"") }
        if case .number(let rawNumber)? = body["r"], let number = Int(exactly: rawNumber) {
            let result = body["b"] ?? .null
            self = .response(
                number: number, status: ResponseStatus(result["s"]?.stringValue ?? ""), data: result["d"] ?? .null)
            return
        }
        guard case .string(let action)? = body["a"], case .object(let payload)? = body["b"] else {
            throw .malformedMessage("data message without action or body")
        }
        let path = payload["p"]?.stringValue ?? ""
        let tag = payload["t"]?.numberValue.flatMap { Int(exactly: $0) }
        switch action {
        case "d": self = .overwrite(path: path, data: payload["d"] ?? .null, tag: tag)
        case "m": self = .merge(path: path, data: payload["d"] ?? .null, tag: tag)
        case "c": self = .listenRevoked(path: path, query: payload["q"])
        case "ac":
            let status = ResponseStatus(payload["s"]?.stringValue ?? "")
            self = .authRevoked(status: status, reason: payload["d"]?.stringValue ?? "")
        default: throw .malformedMessage("unknown server action \"\(action)\"")
        }
    }
}
