#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What a ``TokenVerifier`` accepts: which keys sign tokens, which claims they must carry, and which
/// credentials mean admin.
///
/// Verifying Firebase Authentication ID tokens of project `my-app` (keys from Google's JWKS,
/// `https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com`):
/// ```swift
/// var configuration = TokenVerifierConfiguration()
/// configuration.keySet = .file(URL(filePath: "/etc/canopy/securetoken.jwks.json"))
/// configuration.issuer = "https://securetoken.google.com/my-app"
/// configuration.audience = "my-app"
/// configuration.adminSecret = adminSecretFromEnvironment
/// let verifier = try await TokenVerifier(configuration: configuration)
/// ```
public struct TokenVerifierConfiguration: Sendable {
    /// Where the public keys of RS256 and ES256 tokens come from.
    public enum KeySetSource: Sendable, Hashable {
        /// A JWKS file, read once when the verifier is made.
        case file(URL)
        /// JWKS text: `{"keys": [{"kty": "RSA", "kid": "…", "n": "…", "e": "AQAB"}, …]}`.
        case json(String)
    }

    /// The secret HS256 tokens are signed with, at least 32 bytes long; `nil` refuses HS256 tokens.
    public var sharedSecret: String?
    /// The public keys RS256 and ES256 tokens are checked with, chosen by the header's `kid`; `nil` refuses
    /// those tokens.
    ///
    /// A key without `alg` is taken as RS256 (`kty` `RSA`) or ES256 (`kty` `EC`); keys for other algorithms
    /// make the verifier's initializer throw.
    public var keySet: KeySetSource?
    /// The `iss` every signed token must carry; `nil` accepts any.
    public var issuer: String?
    /// The value the `aud` (a string or an array) of every signed token must include; `nil` accepts any.
    public var audience: String?
    /// How far `exp`, `nbf` and `iat` may be off, in seconds, for clocks that disagree.
    public var clockSkew: TimeInterval
    /// The longest credential looked at, in UTF-8 bytes; longer ones are refused before any parsing.
    ///
    /// Firebase ID tokens are about 1 KB, and Firebase limits the custom claims in them to 1,000 bytes
    /// (legacy custom tokens were limited to 1,024 characters in all), so the default of 8 KiB leaves room
    /// for tokens from other issuers while bounding the work an unauthenticated client can cause.
    public var maximumTokenBytes: Int
    /// A credential equal to this is the admin, which rules do not restrict; compared in constant time.
    ///
    /// It must be at most ``maximumTokenBytes`` long to ever match.
    public var adminSecret: String?
    /// Accept what the Firebase emulators accept: `owner` as the admin credential and the unsigned
    /// (`alg: "none"`) tokens the SDKs make for `connectDatabaseEmulator(…, {mockUserToken})`.
    ///
    /// Never enable this on a server reachable by untrusted clients: anyone can then act as any user.
    public var isEmulator: Bool
    /// Accept `owner` as the admin credential, as the Firebase emulator does, without accepting unsigned
    /// tokens: for a development server that has no other credential. ``isEmulator`` implies it.
    public var acceptsOwner: Bool
    /// The current time; tests inject a fixed clock.
    public var now: @Sendable () -> Date

    /// A configuration that accepts no tokens until keys are given, with a 60 s clock skew and an 8 KiB limit.
    public init(
        sharedSecret: String? = nil,
        keySet: KeySetSource? = nil,
        issuer: String? = nil,
        audience: String? = nil,
        clockSkew: TimeInterval = 60,
        maximumTokenBytes: Int = 8 * 1024,
        adminSecret: String? = nil,
        isEmulator: Bool = false,
        acceptsOwner: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.sharedSecret = sharedSecret
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
        self.clockSkew = clockSkew
        self.maximumTokenBytes = maximumTokenBytes
        self.adminSecret = adminSecret
        self.isEmulator = isEmulator
        self.acceptsOwner = acceptsOwner
        self.now = now
    }
}
