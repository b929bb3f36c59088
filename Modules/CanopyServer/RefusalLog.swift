import Rules
import Tree

/// The last requests the rules refused in a namespace, newest last, for the console's log
/// (`GET /.settings/rules/refusals.json`). Bounded: past ``capacity`` the oldest go.
///
/// Only refusals are recorded, as they happen; what is kept is the rules' own ``RuleDenial``,
/// turned into text only when the log is read.
struct RefusalLog: Sendable {
    /// How many refusals are kept.
    let capacity: Int
    private var ring: [RuleRefusal] = []
    /// Where the next refusal goes in `ring` once it is full.
    private var next = 0
    /// The sequence number of the last refusal recorded (0: none yet); numbers start at 1.
    private(set) var lastSequence = 0

    init(capacity: Int = 1000) {
        self.capacity = max(1, capacity)
    }

    mutating func record(_ refusal: RuleRefusal) {
        var refusal = refusal
        lastSequence += 1
        refusal.sequence = lastSequence
        if ring.count < capacity {
            ring.append(refusal)
        } else {
            ring[next] = refusal
            next = (next + 1) % capacity
        }
    }

    /// The refusals recorded after sequence number `after`, newest first, at most `limit`.
    func refusals(after: Int = 0, limit: Int = .max) -> [RuleRefusal] {
        var found: [RuleRefusal] = []
        let count = ring.count
        var index = count - 1
        while index >= 0, found.count < limit {
            let refusal = ring[(next + index) % count]
            guard refusal.sequence > after else { break }
            found.append(refusal)
            index -= 1
        }
        return found
    }
}

/// One request the rules refused.
struct RuleRefusal: Sendable {
    /// Its place in the namespace's log, from 1 (set when recorded).
    var sequence = 0
    /// Milliseconds since 1970 on the server's clock.
    var time: Double
    var path: Path
    var operation: RefusedOperation
    /// The `auth.uid` of the caller; `nil` when unauthenticated or the `auth` variable has no uid.
    var uid: String?
    var authenticated: Bool
    var transport: RequestTransport?
    var denial: RuleDenial
}

/// What a refused request asked to do.
enum RefusedOperation: String, Sendable {
    /// A one-shot read (REST `GET`, realtime `g`).
    case read
    /// A listen (REST event stream, realtime `q`).
    case listen
    /// A set (REST `PUT`, `POST`, `DELETE`, realtime `p`; an onDisconnect set as it runs).
    case set
    /// A multi-path update (REST `PATCH`, realtime `m`; an onDisconnect update as it runs).
    case update
    /// Registering an onDisconnect set (realtime `o`).
    case onDisconnectSet = "onDisconnect set"
    /// Registering an onDisconnect update (realtime `om`).
    case onDisconnectUpdate = "onDisconnect update"
}

/// How a request reached the database, for the log of refusals: set by the code that serves each
/// transport for the requests it hands over (``current``), and read only when a refusal is recorded.
enum RequestTransport: String, Sendable {
    /// REST (`GET`, `PUT`, `PATCH`, `POST`, `DELETE`, event streams).
    case rest
    /// The realtime protocol over WebSocket.
    case realtime
    /// The onDisconnect operations of a connection that went away, run by the server.
    case disconnect

    @TaskLocal static var current: RequestTransport?
}
