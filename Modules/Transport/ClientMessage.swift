public import Tree

/// What a client asks the server to do: the `a` (action) and `b` (body) of a request.
public enum ClientAction: Sendable, Equatable {
    /// `q`: listen at `path` with an optional query object, tag and hash of cached data.
    case listen(path: String, query: JSONValue?, tag: Int?, hash: String?)
    /// `n`: stop listening.
    case unlisten(path: String, query: JSONValue?, tag: Int?)
    /// `p`: set; with `hash`, a compare-and-set.
    case put(path: String, data: JSONValue, hash: String?)
    /// `m`: multi-path update relative to `path`.
    case merge(path: String, data: JSONValue)
    /// `o`: onDisconnect set.
    case onDisconnectPut(path: String, data: JSONValue)
    /// `om`: onDisconnect update.
    case onDisconnectMerge(path: String, data: JSONValue)
    /// `oc`: cancel onDisconnect operations at and below `path`.
    case onDisconnectCancel(path: String)
    /// `g`: one-shot read with an optional query.
    case get(path: String, query: JSONValue?)
    /// `auth`: authenticate with a credential (an ID token).
    case auth(credential: String)
    /// `gauth`: authenticate with an admin credential; with `authVariable` (`authvar`, what the admin
    /// SDKs send for `databaseAuthVariableOverride`), act as that identity under the rules; `.null`
    /// (sent as `noauth: true`) acts unauthenticated.
    case adminAuth(credential: String, authVariable: JSONValue?)
    /// `unauth`.
    case unauth
    /// `s`: client statistics (answered `ok`, otherwise ignored).
    case stats(JSONValue)
    /// Any action the server does not know; answered with `unknown_action`.
    case unknown(action: String)

    /// The wire name of the action.
    public var name: String {
        switch self {
        case .listen: "q"
        case .unlisten: "n"
        case .put: "p"
        case .merge: "m"
        case .onDisconnectPut: "o"
        case .onDisconnectMerge: "om"
        case .onDisconnectCancel: "oc"
        case .get: "g"
        case .auth: "auth"
        case .adminAuth: "gauth"
        case .unauth: "unauth"
        case .stats: "s"
        case .unknown(let action): action
        }
    }
}

/// A numbered request (`{"r": n, "a": action, "b": body}`).
public struct ClientRequest: Sendable, Equatable {
    public var number: Int
    public var action: ClientAction
    /// For a put or merge, the client's name for the write (body member `w`, a Canopy extension;
    /// see ``WriteID``).
    public var writeID: WriteID?

    public init(number: Int, action: ClientAction, writeID: WriteID? = nil) {
        self.number = number
        self.action = action
        self.writeID = writeID
    }
}

/// A message from a client: a request, or a control message (ping, pong, ...).
public enum ClientMessage: Sendable, Equatable {
    case request(ClientRequest)
    /// Control `p`: answer with a pong.
    case ping
    /// Control `o`.
    case pong
    /// Another control command (ignored by the server).
    case control(String)
}

extension ClientMessage {
    /// Decodes the JSON of one assembled message.
    ///
    /// ```swift
    /// let message = try ClientMessage(json: JSONValue(parsing: #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"a","d":1}}}"#))
    /// // .request(ClientRequest(number: 1, action: .put(path: "a", data: 1, hash: nil)))
    /// ```
    public init(json: JSONValue) throws(ProtocolError) {
        guard case .object(let envelope) = json, case .object(let body)? = envelope["d"] else {
            throw .malformedMessage("expected {\"t\": ..., \"d\": {...}}")
        }
        try self.init(type: envelope["t"], body: RequestFields(body))
    }

    /// A message from its envelope's type (`t`) and body (`d`), however they were read.
    init(type: JSONValue?, body: RequestFields) throws(ProtocolError) {
        guard case .string(let type)? = type else { throw .malformedMessage("expected {\"t\": ..., \"d\": {...}}") }
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

    /// The JSON envelope of this message (what a client sends).
    public var json: JSONValue {
        switch self {
        case .request(let request): ["t": "d", "d": request.json]
        case .ping: ["t": "c", "d": ["t": "p", "d": [:]]]
        case .pong: ["t": "c", "d": ["t": "o", "d": [:]]]
        case .control(let command): ["t": "c", "d": ["t": .string(command), "d": [:]]]
        }
    }
}

extension ClientRequest {
    init(fields: RequestFields) throws(ProtocolError) {
        guard case .number(let rawNumber)? = fields.number, let number = Int(exactly: rawNumber) else {
            throw .malformedMessage("request without a number \"r\"")
        }
        guard case .string(let actionName)? = fields.action else {
            throw .invalidRequest(number: number, reason: "missing action \"a\"")
        }
        let payload = fields.payload
        func path() throws(ProtocolError) -> String {
            guard case .string(let path)? = payload.path else {
                throw .invalidRequest(number: number, reason: "missing path \"p\"")
            }
            return path
        }
        func data() throws(ProtocolError) -> JSONValue {
            guard let data = payload.data else { throw .invalidRequest(number: number, reason: "missing data \"d\"") }
            return data
        }
        func tag() throws(ProtocolError) -> Int? {
            guard let raw = payload.tag, raw != .null else { return nil }
            guard case .number(let value) = raw, let tag = Int(exactly: value) else {
                throw .invalidRequest(number: number, reason: "tag \"t\" must be an integer")
            }
            return tag
        }
        let query = payload.query.flatMap { $0 == .null ? nil : $0 }
        let action: ClientAction
        switch actionName {
        case "q": action = .listen(path: try path(), query: query, tag: try tag(), hash: payload.hash?.stringValue)
        case "n": action = .unlisten(path: try path(), query: query, tag: try tag())
        case "p": action = .put(path: try path(), data: try data(), hash: payload.hash?.stringValue)
        case "m": action = .merge(path: try path(), data: try data())
        case "o": action = .onDisconnectPut(path: try path(), data: try data())
        case "om": action = .onDisconnectMerge(path: try path(), data: try data())
        case "oc": action = .onDisconnectCancel(path: try path())
        case "g": action = .get(path: try path(), query: query)
        case "auth", "gauth":
            guard case .string(let credential)? = payload.credential else {
                throw .invalidRequest(number: number, reason: "missing credential \"cred\"")
            }
            action =
                actionName == "auth"
                ? .auth(credential: credential)
                : .adminAuth(
                    credential: credential,
                    authVariable: payload.noAuth == .bool(true) ? .null : payload.authVariable)
        case "unauth": action = .unauth
        case "s": action = .stats(payload.stats ?? .null)
        default: action = .unknown(action: actionName)
        }
        // A `w` that is not a write id is ignored, like any member the protocol does not define.
        let writeID = payload.writeID.flatMap(WriteID.init(json:))
        self.init(number: number, action: action, writeID: writeID)
    }

    /// The `d` member of the request's envelope.
    public var json: JSONValue {
        var body: [String: JSONValue] = [:]
        switch action {
        case .listen(let path, let query, let tag, let hash):
            body["p"] = .string(path)
            if let query { body["q"] = query }
            if let tag { body["t"] = .number(Double(tag)) }
            body["h"] = .string(hash ?? "")
        case .unlisten(let path, let query, let tag):
            body["p"] = .string(path)
            if let query { body["q"] = query }
            if let tag { body["t"] = .number(Double(tag)) }
        case .put(let path, let data, let hash):
            body["p"] = .string(path)
            body["d"] = data
            if let hash { body["h"] = .string(hash) }
        case .merge(let path, let data), .onDisconnectPut(let path, let data), .onDisconnectMerge(let path, let data):
            body["p"] = .string(path)
            body["d"] = data
        case .onDisconnectCancel(let path):
            body["p"] = .string(path)
            body["d"] = .null
        case .get(let path, let query):
            body["p"] = .string(path)
            body["q"] = query ?? [:]
        case .auth(let credential):
            body["cred"] = .string(credential)
        case .adminAuth(let credential, let authVariable):
            body["cred"] = .string(credential)
            if authVariable == .null {
                body["noauth"] = true
            } else if let authVariable {
                body["authvar"] = authVariable
            }
        case .unauth, .unknown:
            break
        case .stats(let stats):
            body["c"] = stats
        }
        if let writeID { body["w"] = writeID.json }
        return ["r": .number(Double(number)), "a": .string(action.name), "b": .object(body)]
    }
}
