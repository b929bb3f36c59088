import Foundation
import Logging
import Synchronization

/// Serving HTTPS and `wss://` (``ServerConfiguration/tls``).
extension CanopyServer {
    /// Whether this server serves TLS (``ServerConfiguration/tls`` is set).
    public var servesTLS: Bool { configuration.tls != nil }

    /// Reads the ``ServerConfiguration/tls`` files again, as `SIGHUP` does: when they hold a new pair
    /// that can be served, new connections get it (open ones keep theirs); a pair that cannot is
    /// refused with one log line and the current one kept. Returns whether a new pair is served.
    @discardableResult
    public func reloadTLS() -> Bool {
        guard let certificate = tlsCertificate.value.withLock({ $0 }) else { return false }
        if case .renewed = certificate.reload(reason: .signal) { return true }
        return false
    }

    /// Loads and checks the certificate and key before anything is served; warns when the
    /// certificate expires within 14 days.
    func prepareTLS() throws(StartupError) -> ServedCertificate? {
        if let authorities = configuration.tlsCAFile {
            do {
                try TLSIdentity.checkAuthorities(authorities)
            } catch {
                throw .tls(error)
            }
        }
        guard let files = configuration.tls else { return nil }
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity.load(files)
        } catch {
            throw .tls(error)
        }
        let certificate = ServedCertificate(identity, logger: logger)
        tlsCertificate.value.withLock { $0 = certificate }
        let metadata = Logger.Metadata(uniqueKeysWithValues: identity.facts.map { ($0.key, .string($0.value)) })
        logger.info("serving TLS", metadata: metadata)
        if identity.expiresSoon() {
            logger.warning(
                "the TLS certificate expires within 14 days: renew it (the server picks up the new files by itself)",
                metadata: [
                    "notValidAfter": "\(TLSFileError.format(identity.notValidAfter))", "file": "\(files.certificate)",
                ])
        }
        return certificate
    }
}

/// The certificate a TLS server serves, once it runs.
final class TLSCertificateSlot: Sendable {
    let value = Mutex<ServedCertificate?>(nil)
}
