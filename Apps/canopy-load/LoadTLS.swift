import AsyncHTTPClient
import NIOSSL
import Synchronization

/// Whether the tool talks to the server over TLS (`--tls`, `--tls-ca-file`), and the client context
/// every connection then uses: TLS 1.2 or later, the server's certificate verified against the
/// system's trust roots and the CA file (for `--launch --tls`, the throwaway CA the tool made).
enum LoadTLS {
    private struct State {
        var enabled = false
        var caFile: String?
        var context: NIOSSLContext?
        var configuration: TLSConfiguration?
        var client: HTTPClient?
    }

    private static let state = Mutex(State())

    /// Connects over TLS from now on, trusting `caFile` besides the system's roots.
    static func enable(caFile: String?) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let caFile { configuration.additionalTrustRoots = [.file(caFile)] }
        let context = try NIOSSLContext(configuration: configuration)
        var http = HTTPClient.Configuration()
        http.tlsConfiguration = configuration
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        let previous = state.withLock { state in
            defer {
                state = State(
                    enabled: true, caFile: caFile, context: context, configuration: configuration, client: client)
            }
            return state.client
        }
        try? previous?.syncShutdown()
    }

    static var isEnabled: Bool { state.withLock { $0.enabled } }

    /// The CA file trusted besides the system's roots, if any.
    static var caFile: String? { state.withLock { $0.caFile } }

    /// The context of new realtime connections, `nil` for plain `ws://`.
    static var context: NIOSSLContext? { state.withLock { $0.context } }

    /// `https` or `http`.
    static var scheme: String { isEnabled ? "https" : "http" }

    /// The client for the tool's own REST requests (`/metrics`): `HTTPClient.shared` without TLS.
    static var httpClient: HTTPClient { state.withLock { $0.client } ?? HTTPClient.shared }

    /// `configuration` with the TLS client configuration in force.
    static func applied(to configuration: HTTPClient.Configuration) -> HTTPClient.Configuration {
        var configuration = configuration
        if let tls = state.withLock({ $0.configuration }) { configuration.tlsConfiguration = tls }
        return configuration
    }
}
