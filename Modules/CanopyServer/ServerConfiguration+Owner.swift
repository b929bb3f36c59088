import Auth

extension ServerConfiguration {
    /// Whether `owner`, the Firebase emulator's admin credential (what firebase-admin sends when
    /// `FIREBASE_DATABASE_EMULATOR_HOST` is set), is the admin: in emulator mode, when
    /// ``TokenVerifierConfiguration/acceptsOwner`` says so, and on a development server, one with
    /// no credential configured (no admin secret, HS256 secret or key set) that listens on a
    /// loopback address only.
    public var acceptsOwner: Bool {
        authentication.isEmulator || authentication.acceptsOwner || (!hasCredentials && Self.isLoopback(host))
    }

    /// Whether a credential is configured: an admin secret, an HS256 secret or a key set.
    var hasCredentials: Bool {
        authentication.adminSecret != nil || authentication.sharedSecret != nil || authentication.keySet != nil
    }

    /// What a client that sent `owner` where it is not the admin is told: why, and what to do.
    var ownerRefusal: String {
        let why =
            if authentication.adminSecret != nil {
                "this server has an admin secret (--admin-secret, CANOPY_ADMIN_SECRET): send it instead"
            } else if hasCredentials {
                "this server verifies ID tokens (--auth-secret, --jwks-file) and has no admin secret: "
                    + "configure one with --admin-secret and send it"
            } else {
                "this server listens on \(host), not a loopback address: configure an admin secret with "
                    + "--admin-secret and send it"
            }
        return "'owner' is not the admin here: \(why); or run a development server with --emulator"
    }
}
