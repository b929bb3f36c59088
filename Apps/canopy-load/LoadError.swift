/// What went wrong in a load run, said so that the person running it can act on it.
enum LoadError: Error, CustomStringConvertible {
    case notUpgraded(String)
    case unexpectedResponse(String)
    case fileLimit(what: String, needed: UInt64, limit: UInt64)
    case executableNotFound(name: String, searched: [String])
    case launchFailed(executable: String, reason: String)
    case serverDidNotStart(name: String, address: String, seconds: Double, log: String)
    case addressInUse(String)
    case httpFailed(url: String, reason: String)
    case redis(String)
    case listenersLost(Int)
    case clientsNotReady(ready: Int, total: Int)
    /// A scenario's own check failed (said in the text).
    case check(String)
    /// No connection to `address` (`host:port`) could be made; `reason` says why.
    case cannotConnect(address: String, reason: String)
    /// The server answered the realtime `auth` request with `status` (`invalid_token`, …).
    case tokenRefused(server: String, status: String, reason: String)
    /// The server answered some of `total` requests of a kind (`what`: "writes", "listens") with
    /// a status other than `ok`, counted by status in `refusals`.
    case refused(what: String, refusals: [String: Int], total: Int, server: String)
    /// A REST request (`what`: "PUT /storm") was answered with an HTTP error.
    case requestRefused(what: String, server: String, status: Int, message: String)

    var description: String {
        switch self {
        case .notUpgraded(let url):
            "\(url) did not accept the WebSocket upgrade"
        case .unexpectedResponse(let reason):
            "unexpected HTTP response: \(reason)"
        case .fileLimit(let what, let needed, let limit):
            "\(what) needs about \(needed) file descriptors, but the limit is \(limit) even after raising it to the "
                + "hard limit (raise the hard limit, e.g. `ulimit -Hn` as root, or run fewer)"
        case .executableNotFound(let name, let searched):
            "\(name) was not found (looked in: \(searched.joined(separator: ", "))); name it with an option"
        case .launchFailed(let executable, let reason):
            "could not start \(executable): \(reason)"
        case .serverDidNotStart(let name, let address, let seconds, let log):
            "\(name) did not answer at \(address) within \(Int(seconds)) s" + (log.isEmpty ? "" : "; see \(log)")
        case .addressInUse(let address):
            "something already answers at \(address); pick a free port for the server the tool starts"
        case .httpFailed(let url, let reason):
            "\(url): \(reason)"
        case .redis(let reason):
            "redis: \(reason)"
        case .listenersLost(let count):
            "\(count) listener connection(s) closed before their listen was answered"
        case .clientsNotReady(let ready, let total):
            "only \(ready) of \(total) clients had their listens answered in time"
        case .check(let reason):
            reason
        case .cannotConnect(let address, let reason):
            "cannot connect to \(address): \(reason)"
        case .tokenRefused(let server, let status, let reason):
            "\(server) refused the token (\(status)\(reason.isEmpty ? "" : ": " + reason))"
        case .refused(let what, let refusals, let total, let server):
            Self.refusedText(what: what, refusals: refusals, total: total, server: server)
        case .requestRefused(let what, let server, let status, let message):
            "\(server) refused \(what) (HTTP \(status)\(message.isEmpty ? "" : ": " + message))"
                + (status == 401 || status == 403 ? Self.tokenHint : "")
        }
    }

    /// The exit status of a run that ends with this error: 69 (EX_UNAVAILABLE) when the server
    /// cannot be reached, 77 (EX_NOPERM) when it refused the token or the requests, 1 otherwise.
    var exitCode: Int32 {
        switch self {
        case .cannotConnect: 69
        case .tokenRefused, .refused, .requestRefused: 77
        default: 1
        }
    }

    private static let tokenHint = "; give a credential the rules allow with --token or CANOPY_TOKEN"

    private static func refusedText(what: String, refusals: [String: Int], total: Int, server: String) -> String {
        let refused = refusals.values.reduce(0, +)
        let statuses = Refusals.describe(refusals)
        let denied = refusals.keys.contains { $0 == "permission_denied" || $0.hasSuffix("_token") }
        let hint = denied ? tokenHint : ""
        if refused >= total {
            return
                "\(server) refused every one of the \(what) (\(statuses), of \(total) answered): nothing was measured"
                + hint
        }
        return "\(server) refused \(refused) of the \(total) \(what) answered (\(statuses))" + hint
    }
}
