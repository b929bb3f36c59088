/// Why a `canopy` command failed, each case with its own exit code (codes from `sysexits.h`, as
/// argument-parser's own 64 for a wrong command line).
///
/// The message names what was wrong and where; `canopy` prints it on one line of stderr.
enum CLIError: Error, CustomStringConvertible {
    /// JSON that does not parse, a path or key the database cannot address, a value or query the
    /// server refused (HTTP 400 or 413).
    case invalidInput(String)
    /// An input file that cannot be opened or read.
    case unreadableInput(String)
    /// The server has no such database (HTTP 404).
    case notFound(String)
    /// No connection to the server, no answer in time, or a server error (HTTP 5xx).
    case unreachable(String)
    /// The server refused the credentials (HTTP 401 or 403, `permission_denied`).
    case permissionDenied(String)
    /// The output could not be written.
    case output(String)
    /// Anything else: an answer `canopy` does not understand.
    case failed(String)

    /// The process exit code.
    var exitCode: Int32 {
        switch self {
        case .invalidInput: 65
        case .unreadableInput: 66
        case .notFound: 68
        case .unreachable: 69
        case .output: 74
        case .permissionDenied: 77
        case .failed: 1
        }
    }

    var description: String {
        switch self {
        case .invalidInput(let message), .unreadableInput(let message), .notFound(let message),
            .unreachable(let message), .permissionDenied(let message), .output(let message), .failed(let message):
            message
        }
    }

    /// The same kind of error with `note` after its message (`"…; the import stopped, …"`).
    func adding(_ note: String) -> CLIError {
        let message = description + "; " + note
        return switch self {
        case .invalidInput: .invalidInput(message)
        case .unreadableInput: .unreadableInput(message)
        case .notFound: .notFound(message)
        case .unreachable: .unreachable(message)
        case .permissionDenied: .permissionDenied(message)
        case .output: .output(message)
        case .failed: .failed(message)
        }
    }

    /// The exit codes as the help and `Docs/CLI.md` list them.
    static let exitCodeTable = """
        Exit codes:
          0    success
          1    an answer canopy does not understand
          64   a wrong command line (unknown option, bad flag combination, --url that names no database)
          65   invalid input: JSON that does not parse, a path or key the database cannot address, a value \
        or query the server refused (HTTP 400, 413)
          66   an input file that cannot be read
          68   not found: the server has no such database (HTTP 404)
          69   server unreachable: no connection, no answer in time, or a server error (HTTP 5xx)
          74   the output could not be written
          77   permission denied (HTTP 401, 403)
          130  stopped by Ctrl-C (the shell's 128 + SIGINT; an import or export leaves what it wrote)
        """
}
