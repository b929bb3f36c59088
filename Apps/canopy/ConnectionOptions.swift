import ArgumentParser
import Foundation
import NIOSSL
import RealtimeClientSocket

/// Where the database is and who is asking: `--url`, `--token`, `--timeout`, and which TLS
/// certificates an `https://` server may present: `--ca-file`, `--test-only-pin-sha256`.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help: """
            Database URL, http[s]://HOST:PORT?ns=NAMESPACE; the namespace is ns=, else the host's first \
            label for a domain name, else the server's default. (CANOPY_DATABASE_URL, else \
            http://127.0.0.1:9000)
            """)
    var url: String?

    @Option(
        help:
            "Credential, sent as 'Authorization: Bearer TOKEN': an ID token or the server's admin secret ('owner' on a local server with no credentials configured, or in --emulator mode). (CANOPY_TOKEN)"
    )
    var token: String?

    @Option(help: "Seconds to wait for the server to connect or answer a request.")
    var timeout: Double = 30

    @Option(
        help: ArgumentHelp(
            "PEM file of certificate authorities trusted besides the system's, for an https:// server with a "
                + "private CA. (CANOPY_CA_FILE)",
            valueName: "path"))
    var caFile: String?

    @Option(
        help: ArgumentHelp(
            "For tests only: trust the one server certificate with this SHA-256 fingerprint (a self-signed "
                + "test certificate, as 'openssl x509 -noout -fingerprint -sha256' prints it) and refuse every "
                + "other, the system's trust roots included.",
            valueName: "hex"))
    var testOnlyPinSha256: String?

    /// The URL in force: `--url`, else `CANOPY_DATABASE_URL`, else the local default.
    var databaseURL: String {
        url ?? ProcessInfo.processInfo.environment["CANOPY_DATABASE_URL"] ?? "http://127.0.0.1:9000"
    }

    /// The token in force: `--token`, else `CANOPY_TOKEN`.
    var authToken: String? {
        let value = token ?? ProcessInfo.processInfo.environment["CANOPY_TOKEN"]
        return value?.isEmpty == true ? nil : value
    }

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        _ = try endpoint()
        _ = try serverTrust()
    }

    /// The CA file in force: `--ca-file`, else `CANOPY_CA_FILE`.
    var caFilePath: String? {
        let value = caFile ?? ProcessInfo.processInfo.environment["CANOPY_CA_FILE"]
        return value?.isEmpty == true ? nil : value
    }

    /// The certificates an `https://` server may present, as the options say.
    func serverTrust() throws(ValidationError) -> TLSTrust {
        do {
            switch (caFilePath, testOnlyPinSha256) {
            case (nil, nil): return .system
            case (let path?, nil): return try .addingCertificateAuthorities(pemFile: path)
            case (nil, let pin?): return try .trustingSelfSignedCertificate(sha256: pin)
            case (_?, _?): throw ValidationError("--ca-file and --test-only-pin-sha256 exclude each other")
            }
        } catch let error as TLSTrustError {
            switch error {
            case .unreadableCertificateFile: throw ValidationError("--ca-file: \(error)")
            case .invalidFingerprint: throw ValidationError("--test-only-pin-sha256: \(error)")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The server's base URL (`http://host:port`) and the namespace named by `ns=`, if any.
    func endpoint() throws(ValidationError) -> (base: String, namespace: String?) {
        let text = databaseURL
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw ValidationError("the database URL \"\(text)\" is not a URL such as http://127.0.0.1:9000?ns=demo")
        }
        let secure: Bool
        switch scheme {
        case "http", "ws": secure = false
        case "https", "wss": secure = true
        default:
            throw ValidationError("the database URL \"\(text)\" must start with http://, https://, ws:// or wss://")
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let portPart = components.port.map { ":\($0)" } ?? ""
        let namespace = components.queryItems?.first { $0.name == "ns" }?.value
        return ((secure ? "https://" : "http://") + hostPart + portPart, namespace?.isEmpty == true ? nil : namespace)
    }

    /// Runs `body` with a REST client for this database, shut down afterwards.
    func withREST<Value: Sendable>(_ body: (RESTClient) async throws -> Value) async throws -> Value {
        let (base, namespace) = try endpoint()
        let trust = try serverTrust()
        var tls: TLSConfiguration?
        if let components = URLComponents(string: base), components.scheme == "https", let host = components.host {
            let host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            let port = components.port ?? 443
            do {
                tls = try await trust.clientConfiguration(
                    host: host, port: port, timeout: .milliseconds(Int64(timeout * 1000)))
            } catch {
                throw RESTClient.unreachable(error, base: base, what: "the TLS handshake", timeout: timeout)
            }
        }
        let client = RESTClient(
            base: base, namespace: namespace, token: authToken, timeout: timeout, tls: tls, trust: trust)
        do {
            let value = try await body(client)
            await client.shutdown()
            return value
        } catch {
            await client.shutdown()
            throw error
        }
    }
}
