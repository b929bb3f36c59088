public import Foundation
import RealtimeClientSocket

/// Which TLS certificates the SDK accepts from the server of an `https://` database URL (set
/// ``Database/serverTrust`` before the database is first used).
///
/// ```swift
/// let database = Database.database(url: "https://canopy.internal.example.com")
/// database.serverTrust = try .addingCertificateAuthorities(
///     pemFile: URL(fileURLWithPath: "/etc/canopy/ca.pem"))
/// ```
///
/// A refused certificate stops the connection: ``Database/connectionError`` says whose and why, and
/// the SDK logs it as an error.
public struct ServerTrust: Sendable {
    let trust: TLSTrust
    /// How the app described it, for messages.
    private let summary: String

    /// The system's trust roots (on Linux the bundle in `/etc/ssl/certs`), with the host name
    /// checked: what public certificates, such as Let's Encrypt's, need. The default.
    public static let systemRoots = ServerTrust(trust: .system, summary: "the system's trust roots")

    /// The system's trust roots and the certificate authorities in a PEM file: a private
    /// deployment's own CA. The host name is checked.
    ///
    /// - Throws: ``DatabaseError/invalidSetting(_:reason:)`` when the file cannot be read or holds
    ///   no PEM certificate.
    public static func addingCertificateAuthorities(pemFile: URL) throws(DatabaseError) -> ServerTrust {
        do {
            return ServerTrust(
                trust: try .addingCertificateAuthorities(pemFile: pemFile.path),
                summary: "the system's trust roots and \(pemFile.path)")
        } catch {
            throw .invalidSetting("serverTrust", reason: "\(error)")
        }
    }

    /// **For tests only.** Trusts the one certificate whose SHA-256 fingerprint is `sha256` (as
    /// `openssl x509 -noout -fingerprint -sha256 -in cert.pem` prints it; colons and case do not
    /// matter), whatever host it names and whoever signed it, and refuses every other certificate.
    /// A test server's self-signed certificate is pinned this way; a deployment uses a CA
    /// (``addingCertificateAuthorities(pemFile:)``) so that its certificate can be renewed.
    ///
    /// - Throws: ``DatabaseError/invalidSetting(_:reason:)`` unless `sha256` is 64 hex digits.
    public static func trustingSelfSignedCertificate(sha256: String) throws(DatabaseError) -> ServerTrust {
        do {
            return ServerTrust(
                trust: try .trustingSelfSignedCertificate(sha256: sha256),
                summary: "only the certificate with SHA-256 \(sha256)")
        } catch {
            throw .invalidSetting("serverTrust", reason: "\(error)")
        }
    }
}

extension ServerTrust: CustomStringConvertible {
    public var description: String { summary }
}
