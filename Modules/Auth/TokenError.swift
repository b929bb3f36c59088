#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Why a credential was refused, precisely enough to tell the client what to fix.
///
/// The realtime protocol answers an `auth` request with ``wireStatus`` and ``description`` as its message:
/// ```swift
/// do {
///     credential = try await verifier.verify(token)
/// } catch {
///     answer(status: error.wireStatus, message: error.description)  // "expired_token", "token expired at …"
/// }
/// ```
public enum TokenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The credential is longer than ``TokenVerifierConfiguration/maximumTokenBytes``; it was not parsed.
    case tooLarge(size: Int, limit: Int)
    /// Not a compact JWT: not three base64url parts, or a part that is not the JSON it should be.
    case malformed(reason: String)
    /// The header names an algorithm Canopy does not verify (only HS256, RS256, ES256 and, for the emulator,
    /// `none`).
    case unsupportedAlgorithm(String)
    /// The header names an algorithm this server is not configured for: `none` outside emulator mode, HS256
    /// without a shared secret, RS256 or ES256 without a key set.
    case algorithmNotAllowed(String)
    /// The header's `kid` names no key in the key set (`nil`: the header has no `kid`).
    case unknownKeyID(String?)
    /// The header's algorithm is not the one the key named by `kid` is for.
    case algorithmMismatch(keyID: String, keyAlgorithm: String, tokenAlgorithm: String)
    /// The signature does not match the header and payload.
    case badSignature
    /// The token's `exp` is more than the allowed clock skew in the past.
    case expired(at: Date)
    /// The token's `nbf` or `iat` (`claim`) is more than the allowed clock skew in the future.
    case notYetValid(claim: String, validFrom: Date)
    /// The token's `iss` is not the configured issuer.
    case wrongIssuer(expected: String, got: String?)
    /// The token's `aud` does not include the configured audience.
    case wrongAudience(expected: String, got: [String])
    /// A signed token without `exp`.
    case missingExpiry
    /// No non-empty `sub`, `uid` or `user_id` claim names the user.
    case missingSubject
    /// `owner`, the Firebase emulator's admin credential, on a verifier that does not accept it (neither
    /// ``TokenVerifierConfiguration/isEmulator`` nor ``TokenVerifierConfiguration/acceptsOwner``).
    case ownerNotAccepted
    /// An `auth_variable_override` (or `authvar`) that is not a JSON object or `null`.
    case invalidAuthVariableOverride(reason: String)

    /// The status the realtime protocol answers an `auth` request with: `expired_token` when the token has
    /// expired (clients fetch a fresh one and retry at once), `invalid_token` for everything else.
    public var wireStatus: String {
        if case .expired = self { "expired_token" } else { "invalid_token" }
    }

    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): "token is \(size) bytes, more than the limit of \(limit)"
        case .malformed(let reason): "malformed token: \(reason)"
        case .unsupportedAlgorithm(let algorithm): "unsupported token algorithm \"\(algorithm)\""
        case .algorithmNotAllowed("none"): "unsigned tokens (alg \"none\") are accepted only in emulator mode"
        case .algorithmNotAllowed(let algorithm): "this server is not configured for \(algorithm) tokens"
        case .unknownKeyID(nil): "token header has no key id (kid)"
        case .unknownKeyID(let keyID?): "unknown key id (kid) \"\(keyID)\""
        case .algorithmMismatch(let keyID, let keyAlgorithm, let tokenAlgorithm):
            "key \"\(keyID)\" is for \(keyAlgorithm), the token is signed with \(tokenAlgorithm)"
        case .badSignature: "token signature is invalid"
        case .expired(let date): "token expired at \(Self.describe(date))"
        case .notYetValid(let claim, let date): "token is not valid before \(Self.describe(date)) (\(claim))"
        case .wrongIssuer(let expected, let got):
            "token issuer is \(got.map { "\"\($0)\"" } ?? "missing"), expected \"\(expected)\""
        case .wrongAudience(let expected, let got):
            "token audience \(got.map { "\"\($0)\"" }.joined(separator: ", ")) does not include \"\(expected)\""
        case .missingExpiry: "token has no expiry (exp)"
        case .missingSubject: "token names no user (sub, uid or user_id)"
        case .ownerNotAccepted: "'owner' is the admin only in emulator mode"
        case .invalidAuthVariableOverride(let reason): "invalid auth variable override: \(reason)"
        }
    }

    private static func describe(_ date: Date) -> String {
        "\(date.formatted(.iso8601)) (\(Int64(date.timeIntervalSince1970.rounded(.down))))"
    }
}
