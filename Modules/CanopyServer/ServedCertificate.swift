import Foundation
import Logging
import NIOSSL
import Synchronization

/// The certificate and key a TLS server serves now: each new connection takes ``context`` as it is
/// when accepted, and ``reload(reason:)`` swaps it for the files' new contents (connections already
/// open keep theirs). A pair that cannot be served is refused with one log line and the current one
/// kept.
final class ServedCertificate: Sendable {
    /// Why the files are read again.
    enum Reason: String, Sendable {
        /// `SIGHUP` (or ``CanopyServer/reloadTLS()``): the outcome is always logged.
        case signal = "SIGHUP"
        /// The periodic check: logs only a change, and a refused pair once.
        case fileCheck = "file check"
    }

    enum Outcome: Equatable, Sendable {
        case unchanged
        case renewed(fingerprint: String)
        case refused(TLSFileError)
    }

    let files: TLSFiles
    private let current: Mutex<TLSIdentity>
    /// The contents refused last (`nil` when a file could not be read), and whether that was logged.
    private let lastRefusal = Mutex<Refusal?>(nil)
    private struct Refusal {
        var contents: TLSIdentity.Contents?
        var logged: Bool
    }
    private let logger: Logger

    init(_ identity: TLSIdentity, logger: Logger) {
        self.files = identity.files
        self.current = Mutex(identity)
        self.logger = logger
    }

    /// The context a connection accepted now is served with.
    var context: NIOSSLContext { current.withLock { $0.context } }

    /// Reads the files again; when they changed and hold a pair that can be served, new connections
    /// get it.
    @discardableResult
    func reload(reason: Reason, now: Date = Date()) -> Outcome {
        let contents: TLSIdentity.Contents
        do {
            contents = try TLSIdentity.read(files)
        } catch {
            return refuse(error, contents: nil, reason: reason)
        }
        if contents == current.withLock({ $0.contents }) {
            lastRefusal.withLock { $0 = nil }
            if reason == .signal {
                logger.notice("TLS certificate files unchanged; still serving the same certificate")
            }
            return .unchanged
        }
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity.load(files, contents: contents, now: now)
        } catch {
            return refuse(error, contents: contents, reason: reason)
        }
        current.withLock { $0 = identity }
        lastRefusal.withLock { $0 = nil }
        var metadata = Logger.Metadata(uniqueKeysWithValues: identity.facts.map { ($0.key, .string($0.value)) })
        metadata["reason"] = "\(reason.rawValue)"
        logger.notice("serving a renewed TLS certificate to new connections", metadata: metadata)
        if identity.expiresSoon(now: now) {
            logger.warning(
                "the TLS certificate expires within 14 days",
                metadata: ["notValidAfter": "\(TLSFileError.format(identity.notValidAfter))"])
        }
        return .renewed(fingerprint: identity.fingerprint)
    }

    private func refuse(_ error: TLSFileError, contents: TLSIdentity.Contents?, reason: Reason) -> Outcome {
        // A file being replaced can be missing or half written for a moment: the periodic check
        // logs a refusal once the same contents were refused twice in a row, and only once.
        let logs = lastRefusal.withLock { last in
            let seenBefore = last.map { $0.contents == contents } ?? false
            let wasLogged = seenBefore && last?.logged == true
            let logs = reason == .signal || (seenBefore && !wasLogged)
            last = Refusal(contents: contents, logged: wasLogged || logs)
            return logs
        }
        if logs {
            logger.error(
                "refused the new TLS certificate; still serving the current one",
                metadata: ["problem": "\(error)", "reason": "\(reason.rawValue)"])
        }
        return .refused(error)
    }
}
