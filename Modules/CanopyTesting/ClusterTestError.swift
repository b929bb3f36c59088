/// Why a cluster test's harness gave up: what it waited for did not happen in time, or PostgreSQL
/// or a node answered something it cannot use.
public enum ClusterTestError: Error, CustomStringConvertible {
    case timedOut(String)
    case unexpected(String)

    public var description: String {
        switch self {
        case .timedOut(let what): "timed out waiting for \(what)"
        case .unexpected(let what): what
        }
    }
}
