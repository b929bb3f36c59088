import Foundation
import NIOSSL
public import PostgresNIO

/// Where the PostgreSQL store lives, from a libpq-style URL.
///
/// ```swift
/// try PostgresLocation("postgres://canopy:secret@db.internal:5432/canopy")
/// try PostgresLocation("postgres://canopy@localhost/canopy?host=/run/postgresql")   // a Unix socket
/// ```
///
/// `host=` names the directory of a Unix socket (its file is `.s.PGSQL.<port>`, as libpq has it);
/// `sslmode=` is `disable`, `prefer` (the default over TCP) or `require`.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// The URL without its password, for logs and errors.
    public let description: String
    private let endpoint: Endpoint
    private let user: String
    private let password: String?
    private let database: String?

    private enum Endpoint: Sendable {
        case tcp(host: String, port: Int, tls: TLS)
        case socket(path: String)
    }

    private enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    /// The TLS choice, with its context made once: a context that cannot be made fails the URL
    /// rather than letting `require` fall back to an unencrypted connection.
    private struct TLS: Sendable {
        let mode: TLSMode
        let configuration: TLSConfiguration
        let context: NIOSSLContext?

        init(mode: TLSMode, url: String) throws(PostgresStoreError) {
            self.mode = mode
            configuration = .makeClientConfiguration()
            guard mode != .disable else {
                context = nil
                return
            }
            do {
                context = try NIOSSLContext(configuration: configuration)
            } catch {
                throw .invalidURL(url, reason: "sslmode \(mode.rawValue): cannot set up TLS (\(error))")
            }
        }
    }

    public init(_ url: String) throws(PostgresStoreError) {
        guard let components = URLComponents(string: url) else {
            throw .invalidURL(Self.withoutPassword(url), reason: "expected postgres://USER@HOST:PORT/DATABASE")
        }
        var shown = components
        if shown.password != nil { shown.password = "***" }
        let described = shown.string ?? Self.withoutPassword(url)
        guard let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql" else {
            throw .invalidURL(described, reason: "expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard let user = components.user, !user.isEmpty else {
            throw .invalidURL(described, reason: "it names no user")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let parameters = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let port = components.port ?? 5432
        if let socketDirectory = parameters["host"], socketDirectory.hasPrefix("/") {
            endpoint = .socket(path: socketDirectory + "/.s.PGSQL.\(port)")
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw .invalidURL(described, reason: "it names no host (or ?host=/socket/directory)")
            }
            let mode = parameters["sslmode"] ?? "prefer"
            guard let tls = TLSMode(rawValue: mode) else {
                throw .invalidURL(described, reason: "sslmode \"\(mode)\" is not disable, prefer or require")
            }
            endpoint = .tcp(host: host, port: port, tls: try TLS(mode: tls, url: described))
        }
        self.user = user
        self.password = components.password
        self.database = database.isEmpty ? nil : database
        self.description = described
    }

    /// `url` with what lies between `user:` and `@` hidden, for a URL `URLComponents` cannot parse.
    private static func withoutPassword(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"), let at = url[schemeEnd.upperBound...].lastIndex(of: "@"),
            let colon = url[schemeEnd.upperBound..<at].firstIndex(of: ":")
        else { return url }
        return url[..<url.index(after: colon)] + "***" + url[at...]
    }

    /// The pool's configuration.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint {
        case .socket(let path):
            configuration = .init(unixSocketPath: path, username: user, password: password, database: database)
        case .tcp(let host, let port, let choice):
            let tls: PostgresClient.Configuration.TLS =
                switch choice.mode {
                case .disable: .disable
                case .prefer: .prefer(choice.configuration)
                case .require: .require(choice.configuration)
                }
            configuration = .init(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// A single connection's configuration (used at start, where a refused login must fail at once
    /// rather than be retried by the pool).
    public var connectionConfiguration: PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .socket(let path):
            configuration = .init(unixSocketPath: path, username: user, password: password, database: database)
        case .tcp(let host, let port, let choice):
            let tls: PostgresConnection.Configuration.TLS =
                switch (choice.mode, choice.context) {
                case (.prefer, let context?): .prefer(context)
                case (.require, let context?): .require(context)
                default: .disable
                }
            configuration = .init(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
