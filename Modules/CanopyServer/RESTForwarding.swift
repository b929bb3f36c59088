/// How a process passes on a REST request for a namespace another process of the cluster serves.
///
/// A redirect (`307` to the same path on the owner) costs this process nothing, but a client that
/// follows it to another host drops its `Authorization` header (Python's requests, which
/// firebase-admin uses, and browsers do), so an authenticated request would reach the owner
/// anonymous; and the client must be able to reach the owner's advertised host. A proxied request
/// is sent on to the owner by this process, headers and body as received, and its answer streamed
/// back (event streams included).
public enum RESTForwarding: String, Sendable, CaseIterable {
    /// Proxies requests that carry an `Authorization` header, redirects the others.
    case auto
    /// Always answers `307` to the owner.
    case redirect
    /// Always proxies to the owner.
    case proxy

    /// Whether a request with these headers is proxied rather than redirected.
    func proxies(hasAuthorization: Bool) -> Bool {
        switch self {
        case .auto: hasAuthorization
        case .redirect: false
        case .proxy: true
        }
    }
}
