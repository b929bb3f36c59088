import Synchronization

extension Database {
    /// Turns the SDK's debug logging on or off (Firebase's verbose diagnostic logging), for every
    /// database and at once: connections, reconnects and their delays, cache pruning. Messages go
    /// to the handler the app bootstrapped with swift-log (standard error by default), at level
    /// `debug`, whatever level that handler has.
    ///
    /// ```swift
    /// Database.setLoggingEnabled(true)
    /// ```
    public static func setLoggingEnabled(_ enabled: Bool) {
        VerboseLogHandler.isEnabled.store(enabled, ordering: .relaxed)
    }

    /// The version of this SDK, as `canopy-server --version` prints the server's.
    public static func sdkVersion() -> String { "0.1.0" }
}
