import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority and a server certificate for `127.0.0.1` and `localhost` it signed,
/// made for one `--launch --tls` run and written as PEM files to the run's data folder.
struct ThrowawayCertificate {
    let authorityFile: String
    let certificateFile: String
    let keyFile: String

    static func make(in folder: String) throws -> ThrowawayCertificate {
        let now = Date()
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("canopy-load throwaway CA") }
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(authorityKey.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 30 * 24 * 3600, issuer: authorityName, subject: authorityName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 30 * 24 * 3600, issuer: authorityName,
            subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        let files = ThrowawayCertificate(
            authorityFile: folder + "/throwaway-ca.pem", certificateFile: folder + "/throwaway-server.crt",
            keyFile: folder + "/throwaway-server.key")
        try authority.serializeAsPEM().pemString.write(toFile: files.authorityFile, atomically: true, encoding: .utf8)
        try server.serializeAsPEM().pemString.write(toFile: files.certificateFile, atomically: true, encoding: .utf8)
        try serverKey.pemRepresentation.write(toFile: files.keyFile, atomically: true, encoding: .utf8)
        return files
    }
}
