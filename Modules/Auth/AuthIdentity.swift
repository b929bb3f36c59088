public import Tree

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The user a verified token names, as security rules see it.
///
/// ```swift
/// guard case .user(let identity) = try await verifier.verify(idToken) else { … }
/// identity.uid                  // "alice"
/// identity.provider             // "password"
/// identity.token["email"]       // "alice@example.com"
/// identity.authVariable         // {"uid": "alice", "provider": "password", "token": {…every claim…}}
/// ```
public struct AuthIdentity: Sendable, Hashable {
    /// The user's id: the token's `sub`, else its `uid` or `user_id` claim.
    public var uid: String
    /// How the user signed in: `firebase.sign_in_provider` ("password", "anonymous", "google.com", …), or
    /// "custom" when the token does not say.
    public var provider: String
    /// Every claim of the token, as a JSON object (`auth.token` in rules: `auth.token.email`,
    /// `auth.token.admin`, …).
    public var token: JSONValue
    /// When the token expires (its `exp`), after which a connection authenticated with it should be asked for
    /// a new one.
    public var expiresAt: Date?

    public init(uid: String, provider: String, token: JSONValue, expiresAt: Date?) {
        self.uid = uid
        self.provider = provider
        self.token = token
        self.expiresAt = expiresAt
    }

    /// The rules' `auth` variable, in the shape Firebase documents: `{"uid", "provider", "token"}`.
    public var authVariable: JSONValue {
        .object(["uid": .string(uid), "provider": .string(provider), "token": token])
    }
}
