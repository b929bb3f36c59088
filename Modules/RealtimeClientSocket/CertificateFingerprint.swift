import Crypto
import NIOSSL

/// The SHA-256 of a certificate's DER bytes, printed as `AB:CD:…` (as `openssl x509 -fingerprint`).
struct CertificateFingerprint: Sendable, Hashable, CustomStringConvertible {
    let bytes: [UInt8]

    /// Reads 64 hex digits, with or without colons, in either case; `nil` for anything else.
    init?(hex: String) {
        let digits = hex.filter { $0 != ":" }
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.bytes = bytes
    }

    init(of certificate: NIOSSLCertificate) throws {
        bytes = Array(SHA256.hash(data: try certificate.toDERBytes()))
    }

    var description: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}
