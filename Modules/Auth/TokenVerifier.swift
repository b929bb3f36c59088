/// Turns the credential a client presents (the realtime `auth` request's `cred`, a REST `auth=` or
/// `access_token=` parameter, a bearer token) into who it speaks for, or says exactly why it does not.
///
/// The admin secret (and `owner` in emulator mode, or when ``TokenVerifierConfiguration/acceptsOwner``) is the
/// admin; `owner` is otherwise refused as ``TokenError/ownerNotAccepted``; anything else must be a JWT signed with
/// HS256 (the shared secret) or RS256/ES256 (a key of the key set, chosen by `kid`), carrying the configured
/// `iss` and `aud`, within its `exp`, `nbf` and `iat` give or take the clock skew, and naming a user:
/// ```swift
/// let verifier = try await TokenVerifier(configuration: .init(sharedSecret: secret, adminSecret: adminSecret))
/// switch try await verifier.verify(credential) {
/// case .admin: …                                          // rules do not apply
/// case .user(let identity): rules.auth = identity.authVariable
/// }
/// ```
/// Verifying never blocks a thread; a verifier is cheap to share between connections.
public struct TokenVerifier: Sendable {
    public let configuration: TokenVerifierConfiguration
    let keys: SigningKeys
    private let adminSecret: AdminSecret?

    /// Makes a verifier, reading and checking the key set; throws when the configuration cannot work: an
    /// empty admin secret, an HS256 secret under 32 bytes, an unreadable or invalid key set, or a key for an
    /// algorithm other than RS256 or ES256.
    public init(configuration: TokenVerifierConfiguration) async throws(TokenVerifierConfigurationError) {
        if configuration.adminSecret?.isEmpty == true {
            throw .secretTooShort(name: "adminSecret", bytes: 0, minimum: 1)
        }
        self.configuration = configuration
        self.keys = try await SigningKeys(configuration: configuration)
        self.adminSecret = configuration.adminSecret.map(AdminSecret.init)
    }

    /// Who `credential` speaks for; throws ``TokenError`` saying why it is refused.
    ///
    /// A credential longer than ``TokenVerifierConfiguration/maximumTokenBytes`` is refused before anything
    /// else is done with it.
    public func verify(_ credential: String) async throws(TokenError) -> Credential {
        let size = credential.utf8.count
        guard size <= configuration.maximumTokenBytes else {
            throw .tooLarge(size: size, limit: configuration.maximumTokenBytes)
        }
        if let adminSecret, adminSecret.matches(credential) { return .admin }
        if credential == "owner" {
            guard configuration.isEmulator || configuration.acceptsOwner else { throw .ownerNotAccepted }
            return .admin
        }
        return .user(try await identity(verifying: credential))
    }
}
