import CanopyTesting
import Foundation

/// A self-signed certificate for `localhost` and `127.0.0.1` (a CA certificate too, as
/// `openssl req -x509` makes it, so it is its own `--ca-file`), made with `openssl` in a folder of
/// the test's.
struct TestCertificate {
    /// The certificate, PEM.
    let certificatePath: String
    /// Its private key, PEM.
    let keyPath: String
    /// Its SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it (`AB:CD:…`).
    let sha256: String

    enum Failure: Error, CustomStringConvertible {
        case openssl([String], status: Int32, output: String)

        var description: String {
            switch self {
            case .openssl(let arguments, let status, let output):
                "openssl \(arguments.joined(separator: " ")) exited with \(status): \(output)"
            }
        }
    }

    /// Makes a certificate and key named `name` in `folder`, valid for a day.
    static func make(in folder: String, name: String = "server") async throws -> TestCertificate {
        let certificate = "\(folder)/\(name).pem"
        let key = "\(folder)/\(name).key"
        try await openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key,
            "-out", certificate)
        let printed = try await openssl("x509", "-noout", "-fingerprint", "-sha256", "-in", certificate)
        let fingerprint = printed.split(separator: "=").last.map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return TestCertificate(certificatePath: certificate, keyPath: key, sha256: fingerprint ?? "")
    }

    @discardableResult
    private static func openssl(_ arguments: String...) async throws -> String {
        let (status, output) = try await ServerProcess.run(executable: "/usr/bin/openssl", arguments: arguments)
        guard status == 0 else { throw Failure.openssl(arguments, status: status, output: output) }
        return output
    }
}
