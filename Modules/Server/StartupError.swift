/// Why a ``CanopyServer`` could not start.
public enum StartupError: Error, CustomStringConvertible {
    /// The data folder cannot hold the databases: `problem` says why.
    case dataDirectory(path: String, problem: String)
    /// Another process already listens on the address.
    case addressInUse(host: String, port: Int)

    public var description: String {
        switch self {
        case .dataDirectory(let path, let problem): "cannot use data folder \(path): \(problem)"
        case .addressInUse(let host, let port):
            "cannot listen on \(host):\(port): address already in use (is another server running? choose another --port)"
        }
    }
}
