/// Why a ``TokenVerifier`` could not be made from its configuration; a server should refuse to start.
public enum TokenVerifierConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A configured secret (`name` is its configuration field) shorter than `minimum` bytes: an empty admin
    /// secret anyone could match, or an HS256 secret shorter than the 32 bytes RFC 7518 requires (jwt-kit
    /// stops a debug build on one).
    case secretTooShort(name: String, bytes: Int, minimum: Int)
    /// The key set file could not be read.
    case unreadableKeySet(path: String, reason: String)
    /// The key set is not a JWKS document (`{"keys": [...]}`) with at least one key.
    case invalidKeySet(reason: String)
    /// A key in the key set that cannot verify RS256 or ES256 tokens.
    case unsupportedKey(keyID: String?, reason: String)

    public var description: String {
        switch self {
        case .secretTooShort(let name, let bytes, let minimum):
            "\(name) is \(bytes) bytes long; it needs at least \(minimum)"
        case .unreadableKeySet(let path, let reason): "cannot read key set \(path): \(reason)"
        case .invalidKeySet(let reason): "invalid key set: \(reason)"
        case .unsupportedKey(let keyID, let reason):
            "unsupported key \(keyID.map { "\"\($0)\"" } ?? "without kid") in key set: \(reason)"
        }
    }
}
