/// Why a ``CanopyServer`` could not start.
public enum StartupError: Error, CustomStringConvertible {
    /// The data folder cannot hold the databases: `problem` says why.
    case dataDirectory(path: String, problem: String)
    /// Another process already listens on the address.
    case addressInUse(host: String, port: Int)
    /// The rules file cannot be read or is not a valid rules document.
    case rules(path: String, problem: String)
    /// The authentication settings are unusable (a short secret, an unreadable key set).
    case authentication(problem: String)
    /// The PostgreSQL store cannot be used (`--store`).
    case store(problem: String)

    public var description: String {
        switch self {
        case .dataDirectory(let path, let problem): "cannot use data folder \(path): \(problem)"
        case .addressInUse(let host, let port):
            "cannot listen on \(host):\(port): address already in use (is another server running? choose another --port)"
        case .rules(let path, let problem): "cannot use rules file \(path): \(problem)"
        case .authentication(let problem): "cannot set up authentication: \(problem)"
        case .store(let problem): "cannot use the PostgreSQL store: \(problem)"
        }
    }
}
