import ArgumentParser
import Foundation

/// Where the database is and who is asking: `--url`, `--token`, `--timeout`.
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
        let client = RESTClient(base: base, namespace: namespace, token: authToken, timeout: timeout)
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
