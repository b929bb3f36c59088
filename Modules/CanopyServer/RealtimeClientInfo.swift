/// What a realtime client said of itself when it connected, for the console's connections view
/// and the admin origin check: where it connects from, the protocol version and user agent of its
/// upgrade request, and, for a browser page, the page's origin and the host it connected to.
struct RealtimeClientInfo: Sendable {
    /// The client's address (``ClientOrigin/address``).
    var address = "?"
    /// The `v` parameter of the upgrade URL (the protocol version the client speaks).
    var protocolVersion: String?
    /// The upgrade request's `User-Agent`.
    var userAgent: String?
    /// The upgrade request's `Origin` (a browser page's), and its `Host`.
    var pageOrigin: String?
    var host: String?
}
