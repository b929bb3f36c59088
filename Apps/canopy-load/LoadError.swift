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
        }
    }
}
