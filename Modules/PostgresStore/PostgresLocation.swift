import Foundation
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
        case tcp(host: String, port: Int, tls: TLSMode)
        case socket(path: String)
    }

    private enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public init(_ url: String) throws(PostgresStoreError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw .invalidURL(url, reason: "expected postgres://USER@HOST:PORT/DATABASE")
        }
        var shown = components
        if shown.password != nil { shown.password = "***" }
        let described = shown.string ?? "postgres://"
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
            endpoint = .tcp(host: host, port: port, tls: tls)
        }
        self.user = user
        self.password = components.password
        self.database = database.isEmpty ? nil : database
        self.description = described
    }

    /// The pool's configuration.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint {
        case .socket(let path):
            configuration = .init(unixSocketPath: path, username: user, password: password, database: database)
        case .tcp(let host, let port, let mode):
            let tls: PostgresClient.Configuration.TLS =
                switch mode {
                case .disable: .disable
                case .prefer: .prefer(.makeClientConfiguration())
                case .require: .require(.makeClientConfiguration())
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
        case .tcp(let host, let port, let mode):
            let tls: PostgresConnection.Configuration.TLS
            do {
                tls =
                    switch mode {
                    case .disable: .disable
                    case .prefer: .prefer(try .init(configuration: .makeClientConfiguration()))
                    case .require: .require(try .init(configuration: .makeClientConfiguration()))
                    }
            } catch {
                tls = .disable
            }
            configuration = .init(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
