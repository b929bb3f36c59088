import Foundation

/// Whether a browser page may use the admin credential: only a page of the server's own origin.
///
/// Firebase's REST API is open to every origin, and so is Canopy's: a page of any origin may read
/// and write what the rules let its credential. The admin is the exception. A development server
/// takes `owner` as its admin (as the Firebase emulator does), so any page the developer visits
/// could otherwise send `?auth=owner` to `http://127.0.0.1:9000` (a `fetch`, an event stream, or a
/// WebSocket, which has no CORS at all) and read or change everything. A request whose `Origin`
/// is not the origin it was sent to (its `Host`) is refused the admin credential; one with no
/// `Origin` (curl, the SDKs outside a browser, firebase-admin) is not a page's and is not checked.
///
/// A DNS-rebinding page has the server's origin under its own name (`http://evil.example:9000`
/// resolving to `127.0.0.1`), so `owner` is accepted from a page only at a `Host` no one else can
/// name: an IP address, `localhost` (or a name under it), or ``advertiseHost``. The admin secret
/// is accepted from a page of the server's origin at any `Host`: a rebinding page cannot know it.
///
/// ```swift
/// let check = AdminOriginCheck(advertiseHost: nil)
/// check.refusal(origin: "https://evil.example", host: "127.0.0.1:9000", credential: "owner")  // a reason
/// check.refusal(origin: "http://127.0.0.1:9000", host: "127.0.0.1:9000", credential: "owner") // nil
/// check.refusal(origin: nil, host: "127.0.0.1:9000", credential: "owner")                       // nil
/// ```
struct AdminOriginCheck: Sendable {
    /// ``ServerConfiguration/advertiseHost``: a name of this server that pages may use with `owner`.
    var advertiseHost: String?

    init(advertiseHost: String? = nil) {
        self.advertiseHost = advertiseHost
    }

    /// Why a request carrying `origin` (its `Origin` header), sent to `host` (its `Host`), may not
    /// use the admin credential `credential`; `nil` when it may.
    func refusal(origin: String?, host: String?, credential: String?) -> String? {
        guard let origin else { return nil }
        let foreign =
            "The admin credential is refused from a page of another origin (\(origin)): "
            + "only the console served by this server, or a client that is not a browser page, may use it"
        guard let page = Self.authority(ofOrigin: origin), let host,
            let target = Self.authority(ofHost: host, scheme: page.scheme)
        else { return foreign }
        guard page.host == target.host, page.port == target.port else { return foreign }
        if credential == "owner", !isUnambiguous(target.host) {
            return "'owner' is refused from a browser page at \(host): a page may use it only at an IP address, "
                + "localhost, or --advertise-host (a name another site could point at this server would let "
                + "that site's pages act as the admin)"
        }
        return nil
    }

    /// Whether a page at `host` can only be this server's: no other site can make a browser send
    /// its requests there under that name.
    private func isUnambiguous(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        if IPNetwork.addressBytes(host) != nil { return true }
        if let advertised = advertiseHost.flatMap({ Self.authority(ofHost: $0, scheme: "http") }) {
            return advertised.host == host
        }
        return false
    }

    /// The scheme, host (lowercased, IPv6 without brackets) and port (the scheme's default when
    /// absent) of an `Origin` header; `nil` for `null` or anything that is not `scheme://host[:port]`.
    static func authority(ofOrigin origin: String) -> (scheme: String, host: String, port: Int)? {
        guard let separator = origin.range(of: "://") else { return nil }
        let scheme = origin[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        guard let found = authority(ofHost: String(origin[separator.upperBound...]), scheme: scheme) else {
            return nil
        }
        return (scheme, found.host, found.port)
    }

    /// The host (lowercased, IPv6 without brackets) and port of a `Host` header, the port being
    /// `scheme`'s default when absent.
    static func authority(ofHost value: String, scheme: String) -> (host: String, port: Int)? {
        let text = value.lowercased()
        guard !text.isEmpty, !text.contains("/"), !text.contains("@") else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, defaultPort) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()) else { return nil }
            return (host, port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return (text, defaultPort)
        case 2:
            guard let port = Int(parts[1]) else { return nil }
            return (String(parts[0]), port)
        default: return nil
        }
    }
}
