import Auth
import Foundation
import Rules
import Tree

/// Who makes a request, as the rules see it.
enum Caller: Sendable, Equatable {
    /// The admin (the admin secret; `owner` in emulator mode): the rules do not apply.
    case admin
    /// Anyone else: the rules decide, with `auth` as the `auth` variable (`nil`: unauthenticated).
    case user(AuthContext?)

    static let unauthenticated = Caller.user(nil)

    /// The caller a verified credential names.
    init(_ credential: Credential) {
        switch credential {
        case .admin: self = .admin
        case .user(let identity): self = .user(AuthContext(json: identity.authVariable))
        }
    }

    /// The identity an admin's `auth_variable_override` names.
    init(override: AuthVariableOverride) {
        self = override.isUnauthenticated ? .unauthenticated : .user(AuthContext(json: override.authVariable))
    }

    var isAdmin: Bool { self == .admin }

    /// The `auth` variable for the rules (`nil` for the admin, whom they do not see).
    var auth: AuthContext? {
        if case .user(let auth) = self { return auth }
        return nil
    }
}
