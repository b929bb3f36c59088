public import Foundation

/// Why a certificate and key pair cannot be served, naming the file (and its option) at fault.
public enum TLSFileError: Error, Equatable, CustomStringConvertible {
    /// The file cannot be read: `problem` says why (it does not exist, permission denied).
    case unreadable(option: String, path: String, problem: String)
    /// The certificate file holds no PEM certificate, or one that cannot be parsed.
    case invalidCertificate(path: String, problem: String)
    /// The key file holds no PEM private key, or one that cannot be used.
    case invalidKey(path: String, problem: String)
    /// The key is not the private key of the first certificate of the certificate file.
    case keyMismatch(certificate: String, key: String)
    /// The certificate's validity ended at `notValidAfter`.
    case expired(path: String, notValidAfter: Date)
    /// The certificate's validity starts at `notValidBefore`, later than now.
    case notYetValid(path: String, notValidBefore: Date)
    /// The CA file (`--tls-ca-file`) holds no PEM certificate, or one that cannot be parsed.
    case invalidAuthority(path: String, problem: String)

    public var description: String {
        switch self {
        case .unreadable(let option, let path, let problem):
            "cannot read \(option) \(path): \(problem)"
        case .invalidCertificate(let path, let problem):
            "--tls-cert-file \(path) is not a PEM certificate chain: \(problem)"
        case .invalidKey(let path, let problem):
            "--tls-key-file \(path) is not a usable PEM private key: \(problem)"
        case .keyMismatch(let certificate, let key):
            "the private key in \(key) (--tls-key-file) is not the key of the certificate in \(certificate) "
                + "(--tls-cert-file)"
        case .expired(let path, let date):
            "the certificate in \(path) (--tls-cert-file) expired on \(Self.format(date))"
        case .notYetValid(let path, let date):
            "the certificate in \(path) (--tls-cert-file) is not valid before \(Self.format(date))"
        case .invalidAuthority(let path, let problem):
            "--tls-ca-file \(path) is not a PEM file of CA certificates: \(problem)"
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
