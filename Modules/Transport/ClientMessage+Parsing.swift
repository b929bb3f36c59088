import Tree

extension ClientMessage {
    /// Decodes the text of one assembled message: the same as
    /// `ClientMessage(json: JSONValue(parsing: text))`, without building the envelope's objects.
    /// Text that is not JSON throws ``ProtocolError/malformedJSON(_:)``.
    ///
    /// ```swift
    /// let message = try ClientMessage(parsing: #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"a","d":1}}}"#)
    /// // .request(ClientRequest(number: 1, action: .put(path: "a", data: 1, hash: nil)))
    /// ```
    public init(parsing text: String) throws(ProtocolError) {
        var envelope = Envelope()
        do throws(TreeError) {
            try JSONReader.read(text) { (reader) throws(TreeError) in
                guard reader.isAtObject else {
                    _ = try reader.readValue()
                    return
                }
                try reader.readObject { (name, reader) throws(TreeError) in
                    switch name {
                    case "t": envelope.type = try reader.readValue()
                    case "d" where reader.isAtObject:
                        var body = RequestFields()
                        try reader.readObject { (name, reader) throws(TreeError) in
                            if name == "b", reader.isAtObject {
                                body.payload = RequestFields.Payload()
                                try reader.readObject { (name, reader) throws(TreeError) in
                                    body.payload.set(name, try reader.readValue())
                                }
                            } else {
                                let value = try reader.readValue()
                                if name == "b" { body.payload = RequestFields.Payload() }
                                body.set(name, value)
                            }
                        }
                        envelope.body = body
                    case "d":
                        _ = try reader.readValue()
                        envelope.body = nil
                    default:
                        _ = try reader.readValue()
                    }
                }
            }
        } catch {
            throw .malformedJSON(error.description)
        }
        guard case .string(let type)? = envelope.type, let body = envelope.body else {
            throw .malformedMessage("expected {\"t\": ..., \"d\": {...}}")
        }
        switch type {
        case "c":
            guard case .string(let command)? = body.command else { throw .malformedMessage("control without command") }
            switch command {
            case "p": self = .ping
            case "o": self = .pong
            default: self = .control(command)
            }
        case "d":
            self = .request(try ClientRequest(fields: body))
        default:
            throw .malformedMessage("unknown envelope type \"\(type)\"")
        }
    }

    private struct Envelope {
        var type: JSONValue?
        /// The `d` object (`nil` when absent or not an object).
        var body: RequestFields?
    }
}

/// The members of a request body (`d`) that a request is made of; other members are ignored.
struct RequestFields {
    /// `r`
    var number: JSONValue?
    /// `a`
    var action: JSONValue?
    /// `t`, the command of a control message.
    var command: JSONValue?
    /// `b`, when an object (otherwise empty).
    var payload = Payload()

    mutating func set(_ name: String, _ value: JSONValue) {
        switch name {
        case "r": number = value
        case "a": action = value
        case "t": command = value
        default: break
        }
    }

    struct Payload {
        var path: JSONValue?
        var data: JSONValue?
        var hash: JSONValue?
        var query: JSONValue?
        var tag: JSONValue?
        var credential: JSONValue?
        var stats: JSONValue?

        mutating func set(_ name: String, _ value: JSONValue) {
            switch name {
            case "p": path = value
            case "d": data = value
            case "h": hash = value
            case "q": query = value
            case "t": tag = value
            case "cred": credential = value
            case "c": stats = value
            default: break
            }
        }
    }
}
