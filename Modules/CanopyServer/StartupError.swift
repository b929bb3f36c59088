import Auth

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``CanopyServer`` could not start.
public enum StartupError: Error, CustomStringConvertible {
    /// The data folder cannot hold the databases: `problem` says why.
    case dataDirectory(path: String, problem: String)
    /// Another process already listens on the address.
    case addressInUse(host: String, port: Int)
    /// The address cannot be listened on for another reason: `errno` is the system's error, `nil`
    /// when `host` is a name that does not resolve.
    case cannotListen(host: String, port: Int, errno: Int32?)
    /// The rules file cannot be read or is not a valid rules document.
    case rules(path: String, problem: String)
    /// The authentication settings are unusable (a short secret, an unreadable key set).
    case authentication(problem: String)
    /// The PostgreSQL store cannot be used (`--store`).
    case store(problem: String)
    /// The TLS certificate or key cannot be served (`--tls-cert-file`, `--tls-key-file`).
    case tls(TLSFileError)

    public var description: String {
        switch self {
        case .dataDirectory(let path, let problem): "cannot use data folder \(path): \(problem)"
        case .addressInUse(let host, let port):
            "cannot listen on \(host):\(port): address already in use (is another server running? choose another --port)"
        case .cannotListen(let host, let port, let code):
            "cannot listen on \(host):\(port): \(Self.listenProblem(code))"
        case .rules(let path, let problem): "cannot use rules file \(path): \(problem)"
        case .authentication(let problem): "cannot set up authentication: \(problem)"
        case .store(let problem): "cannot use the PostgreSQL store: \(problem)"
        case .tls(let error): "cannot serve TLS: \(error)"
        }
    }

    private static func listenProblem(_ code: Int32?) -> String {
        switch code {
        case nil: "the host name does not resolve to an address (choose another --host)"
        case EADDRNOTAVAIL?: "no network interface of this machine has that address (choose another --host)"
        case EACCES?:
            "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE; choose another --port)"
        case let code?: "\(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// The authentication settings' problem, naming the option (and its variable) to fix.
    static func authentication(_ error: TokenVerifierConfigurationError) -> StartupError {
        switch error {
        case .secretTooShort(name: "sharedSecret", let bytes, let minimum):
            .authentication(
                problem:
                    "--auth-secret (CANOPY_AUTH_SECRET) is \(bytes) bytes long; an HS256 secret needs at least \(minimum)"
            )
        case .secretTooShort(name: "adminSecret", _, _):
            .authentication(problem: "--admin-secret (CANOPY_ADMIN_SECRET) is empty")
        case .secretTooShort:
            .authentication(problem: error.description)
        case .unreadableKeySet, .invalidKeySet, .unsupportedKey:
            .authentication(problem: "--jwks-file (CANOPY_JWKS_FILE): \(error)")
        }
    }
}
