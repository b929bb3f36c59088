import Tree

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

    init() {}

    /// The fields of the body object `reader` is at, read member by member (a repeated name keeps
    /// its last value; a `b` that is not an object leaves the payload empty).
    init(reading reader: inout JSONReader) throws(TreeError) {
        var fields = RequestFields()
        try reader.readObject { (name, reader) throws(TreeError) in
            guard name == "b" else {
                fields.set(name, try reader.readValue())
                return
            }
            fields.payload = Payload()
            if reader.isAtObject {
                try reader.readObject { (name, reader) throws(TreeError) in
                    fields.payload.set(name, try reader.readValue())
                }
            } else {
                _ = try reader.readValue()
            }
        }
        self = fields
    }

    /// The fields of an already parsed body.
    init(_ body: [String: JSONValue]) {
        for (name, value) in body { set(name, value) }
        if case .object(let members)? = body["b"] {
            for (name, value) in members { payload.set(name, value) }
        }
    }

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
        var authVariable: JSONValue?
        var noAuth: JSONValue?
        var stats: JSONValue?
        var writeID: JSONValue?

        mutating func set(_ name: String, _ value: JSONValue) {
            switch name {
            case "p": path = value
            case "d": data = value
            case "h": hash = value
            case "q": query = value
            case "t": tag = value
            case "cred": credential = value
            case "authvar": authVariable = value
            case "noauth": noAuth = value
            case "c": stats = value
            case "w": writeID = value
            default: break
            }
        }
    }
}
