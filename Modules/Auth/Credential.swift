/// Who a verified credential speaks for.
public enum Credential: Sendable, Hashable {
    /// The admin secret (or `owner` in emulator mode): rules do not apply.
    case admin
    /// A user, whose identity the rules see as `auth`.
    case user(AuthIdentity)
}
