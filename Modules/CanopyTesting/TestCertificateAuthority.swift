public import Crypto
public import Foundation
public import NIOSSL
import SwiftASN1
public import X509

/// A certificate authority made for one test: it issues certificates for `127.0.0.1` and
/// `localhost`, and makes the pairs servers must refuse (expired, self-signed, a key that is not
/// the certificate's), each written as PEM files to a folder of the test's.
///
/// ```swift
/// let authority = try TestCertificateAuthority()
/// let files = try authority.issue().write(to: folder, name: "server")
/// configuration.tls = TLSFiles(certificate: files.certificate, key: files.key)
/// var client = TLSConfiguration.makeClientConfiguration()
/// client.trustRoots = .certificates([authority.nioCertificate])
/// ```
public struct TestCertificateAuthority: Sendable {
    public let certificate: Certificate
    private let key: P256.Signing.PrivateKey

    /// A new CA with a new P-256 key, valid from an hour ago for a year.
    public init(name: String = "Canopy Test CA") throws {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        self.key = key
        self.certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 365 * 24 * 3600, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
    }

    /// The CA's certificate as PEM (for `--tls-ca-file`, curl's `--cacert`, `NODE_EXTRA_CA_CERTS`).
    public var certificatePEM: String { (try? certificate.serializeAsPEM().pemString) ?? "" }

    /// The CA's certificate for a swift-nio-ssl client's `trustRoots`.
    public var nioCertificate: NIOSSLCertificate {
        get throws { try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem) }
    }

    /// A client configuration that trusts this CA only.
    public func clientConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try nioCertificate])
        return configuration
    }

    /// Writes the CA's certificate to `folder/NAME.pem` and returns its path.
    public func writeCertificate(to folder: String, name: String = "ca") throws -> String {
        let path = folder + "/\(name).pem"
        try certificatePEM.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A server certificate signed by this CA for `names` (DNS) and `addresses` (IP), with a new key,
    /// valid from `notValidBefore` to `notValidAfter` (by default from an hour ago for 90 days).
    public func issue(
        names: [String] = ["localhost"], addresses: [String] = ["127.0.0.1"], notValidBefore: Date? = nil,
        notValidAfter: Date? = nil
    ) throws -> TestIdentity {
        let now = Date()
        let serverKey = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: notValidBefore ?? now - 3600, notValidAfter: notValidAfter ?? now + 90 * 24 * 3600,
            issuer: self.certificate.subject, subject: try DistinguishedName { CommonName(names.first ?? "canopy") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Self.serverExtensions(names: names, addresses: addresses),
            issuerPrivateKey: Certificate.PrivateKey(key))
        return TestIdentity(certificate: certificate, key: serverKey)
    }

    /// A certificate signed by its own key (no CA vouches for it), for `names` and `addresses`.
    public static func selfSigned(
        names: [String] = ["localhost"], addresses: [String] = ["127.0.0.1"]
    ) throws -> TestIdentity {
        let now = Date()
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(names.first ?? "canopy") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 90 * 24 * 3600, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try serverExtensions(names: names, addresses: addresses),
            issuerPrivateKey: Certificate.PrivateKey(key))
        return TestIdentity(certificate: certificate, key: key)
    }

    private static func serverExtensions(names: [String], addresses: [String]) throws -> Certificate.Extensions {
        var alternativeNames = names.map { GeneralName.dnsName($0) }
        for address in addresses {
            guard let bytes = Self.ipv4Bytes(address) else { continue }
            alternativeNames.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes))))
        }
        return try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(alternativeNames)
        }
    }

    private static func ipv4Bytes(_ address: String) -> [UInt8]? {
        let parts = address.split(separator: ".").compactMap { UInt8($0) }
        return parts.count == 4 ? parts : nil
    }
}

/// A certificate and the private key a server serves it with, as ``TestCertificateAuthority``
/// makes them.
public struct TestIdentity: Sendable {
    public let certificate: Certificate
    public let key: P256.Signing.PrivateKey

    public init(certificate: Certificate, key: P256.Signing.PrivateKey) {
        self.certificate = certificate
        self.key = key
    }

    public var certificatePEM: String { (try? certificate.serializeAsPEM().pemString) ?? "" }
    public var keyPEM: String { key.pemRepresentation }
    public var notValidAfter: Date { certificate.notValidAfter }

    /// The SHA-256 of the certificate's DER encoding, lowercase hex (as the server logs it).
    public var fingerprint: String {
        var serializer = DER.Serializer()
        try? serializer.serialize(certificate)
        return SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02x", $0) }.joined()
    }

    /// This certificate with `other`'s key: a pair whose key does not match.
    public func withKey(of other: TestIdentity) -> TestIdentity {
        TestIdentity(certificate: certificate, key: other.key)
    }

    /// Writes `folder/NAME.crt` and `folder/NAME.key` (replacing them: a renewal) and returns their
    /// paths; `chain` certificates follow this one in the certificate file.
    @discardableResult
    public func write(
        to folder: String, name: String = "server", chain: [Certificate] = []
    ) throws -> (certificate: String, key: String) {
        let certificatePath = folder + "/\(name).crt"
        let keyPath = folder + "/\(name).key"
        let pem = try ([certificate] + chain).map { try $0.serializeAsPEM().pemString }.joined(separator: "\n")
        try (pem + "\n").write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try (keyPEM + "\n").write(toFile: keyPath, atomically: true, encoding: .utf8)
        return (certificatePath, keyPath)
    }
}
