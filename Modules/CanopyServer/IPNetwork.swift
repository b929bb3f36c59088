#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a bare address is the
/// network of that address alone (`/32`, `/128`).
///
/// ```swift
/// let network = try IPNetwork(parsing: "10.1.0.0/16")
/// network.contains(address: "10.1.2.3")   // true
/// network.contains(address: "::1")        // false
/// ```
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 for IPv4, 16 for IPv6), host bits cleared.
    let bytes: [UInt8]
    /// How many leading bits name the network.
    public let prefixLength: Int

    /// Reads `ADDRESS[/PREFIX]`; throws ``IPNetworkError`` naming what is wrong.
    public init(parsing text: String) throws(IPNetworkError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.addressBytes(String(parts[0])) else {
            throw IPNetworkError(text: text, reason: "not an IPv4 or IPv6 address")
        }
        let bits = address.count * 8
        var length = bits
        if parts.count == 2 {
            guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else {
                throw IPNetworkError(text: text, reason: "the prefix length must be 0 to \(bits)")
            }
            length = prefix
        }
        prefixLength = length
        bytes = Self.masked(address, to: length)
    }

    /// Whether `address` (an IPv4 or IPv6 address, brackets allowed) lies in this network; an
    /// IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) counts as its IPv4 address.
    public func contains(address: String) -> Bool {
        guard var candidate = Self.addressBytes(address) else { return false }
        if candidate.count == 16, bytes.count == 4, candidate.prefix(12) == Self.mappedPrefix[...] {
            candidate = Array(candidate.suffix(4))
        }
        return candidate.count == bytes.count && Self.masked(candidate, to: prefixLength) == bytes
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let text = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return "\(text)/\(prefixLength)"
    }

    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// The bytes of an IPv4 or IPv6 address (an IPv6 one may be bracketed or carry a `%zone`).
    static func addressBytes(_ text: String) -> [UInt8]? {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(max(length - index * 8, 0), 8)
            return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> kept)
        }
    }
}

/// Why a text is not an ``IPNetwork``.
public struct IPNetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    public let text: String
    public let reason: String

    public var description: String { "\"\(text)\" is not a CIDR such as 10.0.0.0/8 or fd00::/8: \(reason)" }
}

extension IPNetwork {
    /// Reads a comma-separated list of networks (`"10.0.0.0/8, ::1"`); empty entries are skipped.
    public static func list(parsing text: String) throws(IPNetworkError) -> [IPNetwork] {
        var networks: [IPNetwork] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
            if !trimmed.isEmpty { networks.append(try IPNetwork(parsing: String(trimmed))) }
        }
        return networks
    }
}
