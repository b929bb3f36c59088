/// A reading of a process that could not be made.
public enum ProcessResourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `path` could not be read, or did not hold `what`: the process is gone.
    case unreadable(what: String, path: String)
    /// This system has no `/proc` to read `what` from (macOS).
    case unavailable(what: String)

    public var description: String {
        switch self {
        case .unreadable(let what, let path): "cannot read \(what) from \(path)"
        case .unavailable(let what): "cannot read \(what): this system has no /proc"
        }
    }
}
