public import NIOSSL

/// Which TLS certificates a client accepts from the server of an `https://` or `wss://` URL.
///
/// ```swift
/// let trust = try TLSTrust.addingCertificateAuthorities(pemFile: "/etc/canopy/ca.pem")
/// let tls = try await trust.clientConfiguration(host: "canopy.internal", port: 443, timeout: .seconds(30))
/// let client = try await RealtimeClient.connect(to: endpoint, tlsConfiguration: tls, logger: logger)
/// ```
public struct TLSTrust: Sendable {
    enum Kind: Sendable {
        case system
        case extraAuthorities([NIOSSLCertificate], file: String)
        case pinned(PinnedCertificate)
        /// A `TLSConfiguration` the caller made.
        case custom
    }

    let kind: Kind

    /// The system's trust roots (on Linux the bundle in `/etc/ssl/certs`), with the host name checked.
    public static let system = TLSTrust(kind: .system)

    /// The system's trust roots and the certificate authorities in the PEM file at `path` (for a
    /// private deployment's own CA), with the host name checked.
    ///
    /// - Throws: ``TLSTrustError/unreadableCertificateFile(_:reason:)`` when the file cannot be read
    ///   or holds no PEM certificate.
    public static func addingCertificateAuthorities(pemFile path: String) throws(TLSTrustError) -> TLSTrust {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw .unreadableCertificateFile(path, reason: "\(error)")
        }
        guard !certificates.isEmpty else {
            throw .unreadableCertificateFile(path, reason: "it holds no PEM certificate")
        }
        return TLSTrust(kind: .extraAuthorities(certificates, file: path))
    }

    /// For tests only: trusts the one certificate whose SHA-256 fingerprint (of its DER bytes, as
    /// `openssl x509 -noout -fingerprint -sha256` prints it; colons and case do not matter) is
    /// `sha256`, whatever its host names and issuer, and refuses every other certificate. The
    /// system's trust roots are not used. A first handshake checks the fingerprint; connections
    /// then trust exactly that certificate.
    ///
    /// - Throws: ``TLSTrustError/invalidFingerprint(_:)`` unless `sha256` is 32 bytes in hex.
    public static func trustingSelfSignedCertificate(sha256: String) throws(TLSTrustError) -> TLSTrust {
        guard let fingerprint = CertificateFingerprint(hex: sha256) else { throw .invalidFingerprint(sha256) }
        return TLSTrust(kind: .pinned(PinnedCertificate(fingerprint: fingerprint)))
    }

    /// The TLS settings for connecting to `host:port` (which a pinned certificate is first fetched
    /// from and checked against, once).
    ///
    /// - Throws: ``RealtimeClientError/certificateRefused(_:)`` when the server's certificate does
    ///   not have the pinned fingerprint, ``RealtimeClientError/connectFailed(_:)`` or
    ///   ``RealtimeClientError/timedOut(_:)`` when that first handshake cannot be made.
    public func clientConfiguration(
        host: String, port: Int, timeout: Duration
    ) async throws(RealtimeClientError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch kind {
        case .system, .custom:
            break
        case .extraAuthorities(let certificates, _):
            configuration.additionalTrustRoots = [.certificates(certificates)]
        case .pinned(let pin):
            let certificate = try await pin.certificate(host: host, port: port, timeout: timeout)
            configuration.trustRoots = .certificates([certificate])
            configuration.certificateVerification = .noHostnameVerification
        }
        return configuration
    }

    /// What a failed connection attempt to `host:port` says about the server's certificate: why it
    /// was refused, or `nil` when `error` is not a certificate refusal.
    public func refusal(of error: any Error, host: String, port: Int) -> String? {
        let server = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return "the TLS certificate of \(server) does not name the host \"\(host)\""
        }
        guard case NIOSSLError.handshakeFailed(let reason)? = error as? NIOSSLError,
            "\(reason)".contains("CERTIFICATE_VERIFY_FAILED")
        else { return nil }
        switch kind {
        case .system:
            return "the TLS certificate of \(server) is not trusted: no certificate authority among the "
                + "system's trust roots signed it (or it expired); a private CA is added with its PEM file"
        case .extraAuthorities(_, let file):
            return "the TLS certificate of \(server) is not trusted: neither the system's trust roots nor "
                + "the certificate authorities in \(file) signed it (or it expired)"
        case .pinned(let pin):
            return "the TLS certificate of \(server) is not the pinned one (SHA-256 \(pin.fingerprint)), "
                + "or it expired"
        case .custom:
            return "the TLS certificate of \(server) is not trusted by the TLS configuration given"
        }
    }
}

/// Why a ``TLSTrust`` cannot be made.
public enum TLSTrustError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The certificate file at the path cannot be read, or holds no PEM certificate.
    case unreadableCertificateFile(String, reason: String)
    /// The text is not a SHA-256 fingerprint (32 bytes in hex, colons allowed).
    case invalidFingerprint(String)

    public var description: String {
        switch self {
        case .unreadableCertificateFile(let path, let reason):
            "cannot read the certificate authorities in \(path): \(reason)"
        case .invalidFingerprint(let text):
            "\"\(text)\" is not a SHA-256 fingerprint (64 hex digits, colons allowed, as "
                + "openssl x509 -noout -fingerprint -sha256 prints it)"
        }
    }
}
