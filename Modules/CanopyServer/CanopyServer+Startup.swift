import Auth
import Foundation
import Logging
import PostgresStore
import Rules

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What is checked and prepared before anything is served: the store, the credentials, the rules.
extension CanopyServer {
    /// What the "listening" log line tells: where, the version, where the data lives, the rules file.
    func startupFacts(port: Int) -> Logger.Metadata {
        var facts: Logger.Metadata = [
            "host": "\(configuration.host)", "port": "\(port)", "version": "\(Self.version)",
            "data": "\(configuration.postgresURL != nil ? "postgresql" : configuration.dataDirectory ?? "in-memory")",
        ]
        if let rules = configuration.rulesFile { facts["rules"] = "\(rules)" }
        if servesTLS { facts["tls"] = "https, wss" }
        return facts
    }

    /// This machine's name as the kernel has it (`ProcessInfo.hostName` may ask DNS, and wait).
    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// With ``ServerConfiguration/postgresURL``: starts the connection pool, checks that PostgreSQL
    /// answers and migrates it, before anything is served.
    func preparePostgres() async throws(StartupError) -> (storage: PostgresStorage, pool: Task<Void, Never>)? {
        guard let url = configuration.postgresURL else { return nil }
        let location: PostgresLocation
        do {
            location = try PostgresLocation(url)
        } catch {
            throw .store(problem: error.description)
        }
        let node = configuration.nodeName ?? "\(Self.hostName()):\(configuration.port)"
        let storage = PostgresStorage(
            location: location, node: node, host: configuration.advertiseHost,
            leaseDuration: configuration.leaseDuration, logger: logger)
        let pool = Task { await storage.run() }
        do {
            try await storage.prepare()
        } catch {
            pool.cancel()
            throw .store(problem: error.description)
        }
        await databases.usePostgres(storage) { [sessions] database in sessions.closeAll(using: database) }
        logger.notice("keeping namespaces in PostgreSQL", metadata: ["store": "\(location)", "node": "\(node)"])
        if let host = configuration.advertiseHost, !host.hasPrefix("s-") {
            logger.warning(
                """
                the advertised host does not begin with s-: the official JavaScript SDK falls back to \
                the host it was configured with only from a remembered host beginning with s-, so its \
                clients would keep trying this one after it stops
                """, metadata: ["host": "\(host)"])
        }
        return (storage, pool)
    }

    /// Makes the token verifier and reads the rules file, before anything is served.
    func prepareAuthentication() async throws(StartupError) {
        var authentication = configuration.authentication
        authentication.acceptsOwner = configuration.acceptsOwner
        do {
            authenticator.start(
                try await TokenVerifier(configuration: authentication), ownerRefusal: configuration.ownerRefusal)
        } catch {
            throw .authentication(error)
        }
        if let file = configuration.rulesFile {
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw .rules(path: file, problem: "cannot read it (\(error.localizedDescription))")
            }
            do {
                await databases.useRules(StartupRules(text: text, document: try RulesDocument(parsing: text)))
            } catch {
                throw .rules(path: file, problem: error.description)
            }
        }
        if configuration.authentication.isEmulator {
            logger.warning(
                "emulator mode: 'owner' is the admin and unsigned tokens are accepted; do not expose this server")
        } else if authentication.acceptsOwner {
            logger.notice(
                """
                development server: no credential is configured, so 'owner' is the admin (as in the Firebase \
                emulator) and a namespace without rules allows everyone everything; --admin-secret, \
                --auth-secret or --jwks-file end this
                """)
        }
    }
}
