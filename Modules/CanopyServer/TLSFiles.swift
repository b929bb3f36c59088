/// The PEM files a server serves TLS with: its certificate (followed by the chain up to, not
/// including, the root, as certbot's `fullchain.pem`) and that certificate's private key.
///
/// ```swift
/// configuration.tls = TLSFiles(
///     certificate: "/etc/letsencrypt/live/db.example.com/fullchain.pem",
///     key: "/etc/letsencrypt/live/db.example.com/privkey.pem")
/// ```
public struct TLSFiles: Sendable, Equatable {
    /// The certificate chain, leaf first (`--tls-cert-file`).
    public var certificate: String
    /// The leaf certificate's private key, unencrypted (`--tls-key-file`).
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}
