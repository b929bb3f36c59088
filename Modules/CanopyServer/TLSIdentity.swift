import Crypto
import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A certificate chain and its private key read from ``TLSFiles`` and checked (the key is the
/// certificate's, the certificate is valid now), with the TLS context serving them: TLS 1.2 or
/// 1.3, ALPN `http/1.1`.
struct TLSIdentity: Sendable {
    let files: TLSFiles
    let context: NIOSSLContext
    /// The files' contents when they were read, to notice when either changes.
    let contents: Contents
    let notValidAfter: Date
    /// The leaf certificate's subject, serial number and SHA-256 fingerprint (hex), for the log.
    let subject: String
    let serialNumber: String
    let fingerprint: String

    struct Contents: Equatable, Sendable {
        var certificate: [UInt8]
        var key: [UInt8]
    }

    /// How long a closing connection waits for the client's `close_notify` before it closes the
    /// socket (swift-nio-ssl's default is 5 s). Clients that allow half-closed connections, as
    /// swift-websocket's, do not answer it, and a closed realtime connection's onDisconnect writes
    /// ran only after the wait.
    static let shutdownTimeout: TimeAmount = .milliseconds(500)

    /// Reads both files of `files`; see ``load(_:contents:now:)``.
    static func load(_ files: TLSFiles, now: Date = Date()) throws(TLSFileError) -> TLSIdentity {
        try load(files, contents: read(files), now: now)
    }

    /// The files' contents as they are now.
    static func read(_ files: TLSFiles) throws(TLSFileError) -> Contents {
        Contents(
            certificate: try read(files.certificate, option: "--tls-cert-file"),
            key: try read(files.key, option: "--tls-key-file"))
    }

    /// Parses and checks `contents`, read from `files`: a certificate chain (leaf first) and an
    /// unencrypted private key, PKCS#8, SEC1 or PKCS#1.
    static func load(_ files: TLSFiles, contents: Contents, now: Date) throws(TLSFileError) -> TLSIdentity {
        let certificatePath = files.certificate
        let keyPath = files.key
        let leaf: Certificate
        let leafDER: [UInt8]
        let chain: [NIOSSLCertificate]
        do {
            let documents = try PEMDocument.parseMultiple(
                pemString: String(decoding: contents.certificate, as: UTF8.self))
            guard let first = documents.first(where: { $0.discriminator == "CERTIFICATE" }) else {
                throw TLSFileError.invalidCertificate(path: certificatePath, problem: "it holds no CERTIFICATE block")
            }
            leaf = try Certificate(pemDocument: first)
            leafDER = first.derBytes
            chain = try NIOSSLCertificate.fromPEMBytes(contents.certificate)
        } catch let error as TLSFileError {
            throw error
        } catch {
            throw .invalidCertificate(path: certificatePath, problem: "\(error)")
        }
        let key: NIOSSLPrivateKey
        do {
            let documents = try PEMDocument.parseMultiple(pemString: String(decoding: contents.key, as: UTF8.self))
            if documents.contains(where: { $0.discriminator == "ENCRYPTED PRIVATE KEY" }) {
                throw TLSFileError.invalidKey(path: keyPath, problem: "it is encrypted; give the key unencrypted")
            }
            guard let document = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
                throw TLSFileError.invalidKey(path: keyPath, problem: "it holds no PRIVATE KEY block")
            }
            let parsed = try Certificate.PrivateKey(pemDocument: document)
            guard parsed.publicKey == leaf.publicKey else {
                throw TLSFileError.keyMismatch(certificate: certificatePath, key: keyPath)
            }
            key = try NIOSSLPrivateKey(bytes: Array(document.pemString.utf8), format: .pem)
        } catch let error as TLSFileError {
            throw error
        } catch {
            throw .invalidKey(path: keyPath, problem: "\(error)")
        }
        guard leaf.notValidAfter > now else {
            throw .expired(path: certificatePath, notValidAfter: leaf.notValidAfter)
        }
        guard leaf.notValidBefore <= now else {
            throw .notYetValid(path: certificatePath, notValidBefore: leaf.notValidBefore)
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        configuration.shutdownTimeout = Self.shutdownTimeout
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .invalidCertificate(path: certificatePath, problem: "\(error)")
        }
        return TLSIdentity(
            files: files, context: context, contents: contents, notValidAfter: leaf.notValidAfter,
            subject: "\(leaf.subject)", serialNumber: "\(leaf.serialNumber)",
            fingerprint: SHA256.hash(data: leafDER).map { String(format: "%02x", $0) }.joined())
    }

    /// Checks that `path` holds PEM CA certificates (`--tls-ca-file`).
    static func checkAuthorities(_ path: String) throws(TLSFileError) {
        let bytes = try read(path, option: "--tls-ca-file")
        do {
            let documents = try PEMDocument.parseMultiple(pemString: String(decoding: bytes, as: UTF8.self))
                .filter { $0.discriminator == "CERTIFICATE" }
            guard !documents.isEmpty else {
                throw TLSFileError.invalidAuthority(path: path, problem: "it holds no CERTIFICATE block")
            }
            for document in documents { _ = try Certificate(pemDocument: document) }
            _ = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch let error as TLSFileError {
            throw error
        } catch {
            throw .invalidAuthority(path: path, problem: "\(error)")
        }
    }

    /// What the log says about the certificate served.
    var facts: [String: String] {
        [
            "subject": subject, "serial": serialNumber, "sha256": fingerprint,
            "notValidAfter": TLSFileError.format(notValidAfter),
        ]
    }

    /// Whether the certificate expires within `window` of `now` (a warning at start and renewal).
    func expiresSoon(now: Date = Date(), window: TimeInterval = 14 * 24 * 3600) -> Bool {
        notValidAfter.timeIntervalSince(now) < window
    }

    private static func read(_ path: String, option: String) throws(TLSFileError) -> [UInt8] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw .unreadable(option: option, path: path, problem: "no such file")
        }
        guard !isFolder.boolValue else { throw .unreadable(option: option, path: path, problem: "it is a folder") }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let problem = access(path, R_OK) == 0 ? "it cannot be opened" : String(cString: strerror(errno))
            throw .unreadable(option: option, path: path, problem: problem)
        }
        defer { try? handle.close() }
        do {
            return Array(try handle.readToEnd() ?? Data())
        } catch {
            throw .unreadable(option: option, path: path, problem: error.localizedDescription)
        }
    }
}
