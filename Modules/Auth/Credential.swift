/// Who a verified credential speaks for.
public enum Credential: Sendable, Hashable {
    /// The admin secret (or `owner`, where the configuration accepts it): rules do not apply.
    case admin
    /// A user, whose identity the rules see as `auth`.
    case user(AuthIdentity)
}
