import JWTKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The jwt-kit key collections a verifier checks signatures with, one per kind of token, and which algorithm
/// each public key is for.
///
/// They are kept apart, and a token reaches jwt-kit only after its `alg` and `kid` were matched to a key,
/// because a `JWTKeyCollection` checks a token whose `kid` it does not know with its default key, and a JWK
/// without `alg` would verify whatever algorithm the first token that names it asks for, from then on.
struct SigningKeys: Sendable {
    private let sharedSecret: JWTKeyCollection?
    private let publicKeys: JWTKeyCollection?
    private let publicKeyAlgorithms: [String: JWK.Algorithm]
    private let unsigned: JWTKeyCollection?

    /// The shortest HS256 secret: as long as the hash output (RFC 7518, section 3.2).
    static let minimumSharedSecretBytes = 32

    init(configuration: TokenVerifierConfiguration) async throws(TokenVerifierConfigurationError) {
        if let secret = configuration.sharedSecret {
            guard secret.utf8.count >= Self.minimumSharedSecretBytes else {
                throw .secretTooShort(
                    name: "sharedSecret",
                    bytes: secret.utf8.count,
                    minimum: Self.minimumSharedSecretBytes
                )
            }
            sharedSecret = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        } else {
            sharedSecret = nil
        }
        if let source = configuration.keySet {
            let keys = try Self.normalizedKeys(Self.keySet(from: source))
            let collection = JWTKeyCollection()
            for (keyID, jwk) in keys {
                do {
                    try await collection.add(jwk: jwk)
                } catch {
                    throw .unsupportedKey(keyID: keyID, reason: String(describing: error))
                }
            }
            publicKeys = collection
            publicKeyAlgorithms = keys.compactMapValues(\.algorithm)
        } else {
            publicKeys = nil
            publicKeyAlgorithms = [:]
        }
        unsigned = configuration.isEmulator ? await JWTKeyCollection().addUnsecuredNone() : nil
    }

    /// The collection that checks the signature of a token with this header, or why none may.
    func collection(for header: JWTHeader) throws(TokenError) -> JWTKeyCollection {
        guard let algorithm = header.alg else { throw .malformed(reason: "the header has no algorithm (alg)") }
        switch algorithm {
        case "none":
            guard let unsigned else { throw .algorithmNotAllowed(algorithm) }
            return unsigned
        case "HS256":
            guard let sharedSecret else { throw .algorithmNotAllowed(algorithm) }
            return sharedSecret
        case "RS256", "ES256":
            guard let publicKeys else { throw .algorithmNotAllowed(algorithm) }
            guard let keyID = header.kid, let keyAlgorithm = publicKeyAlgorithms[keyID] else {
                throw .unknownKeyID(header.kid)
            }
            guard keyAlgorithm.rawValue == algorithm else {
                throw .algorithmMismatch(keyID: keyID, keyAlgorithm: keyAlgorithm.rawValue, tokenAlgorithm: algorithm)
            }
            return publicKeys
        default:
            throw .unsupportedAlgorithm(algorithm)
        }
    }

    private static func keySet(
        from source: TokenVerifierConfiguration.KeySetSource
    ) throws(TokenVerifierConfigurationError) -> JWKS {
        let data: Data
        switch source {
        case .file(let url):
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw .unreadableKeySet(path: url.path(percentEncoded: false), reason: String(describing: error))
            }
        case .json(let text):
            data = Data(text.utf8)
        }
        do {
            return try JSONDecoder().decode(JWKS.self, from: data)
        } catch {
            throw .invalidKeySet(reason: String(describing: error))
        }
    }

    /// Each key by its `kid`, with its `alg` filled in (RS256 for RSA keys, ES256 for EC keys) so jwt-kit
    /// makes its verifier now rather than from the first token that names it.
    private static func normalizedKeys(_ keySet: JWKS) throws(TokenVerifierConfigurationError) -> [String: JWK] {
        guard !keySet.keys.isEmpty else { throw .invalidKeySet(reason: "it holds no keys") }
        var keys: [String: JWK] = [:]
        for var jwk in keySet.keys {
            guard let keyID = jwk.keyIdentifier?.string, !keyID.isEmpty else {
                throw .unsupportedKey(keyID: nil, reason: "every key needs a kid")
            }
            let algorithm: JWK.Algorithm
            switch jwk.keyType {
            case .rsa:
                algorithm = .rs256
            case .ecdsa:
                algorithm = .es256
                if let curve = jwk.curve, curve != .ecdsa(.p256) {
                    throw .unsupportedKey(keyID: keyID, reason: "curve \(curve.rawValue); ES256 needs P-256")
                }
            default:
                throw .unsupportedKey(keyID: keyID, reason: "kty \(jwk.keyType.rawValue); expected RSA or EC")
            }
            if let declared = jwk.algorithm, declared != algorithm {
                throw .unsupportedKey(
                    keyID: keyID,
                    reason: "alg \(declared.rawValue); Canopy verifies RS256 with RSA keys and ES256 with EC keys"
                )
            }
            jwk.algorithm = algorithm
            guard keys.updateValue(jwk, forKey: keyID) == nil else {
                throw .invalidKeySet(reason: "two keys have kid \"\(keyID)\"")
            }
        }
        return keys
    }
}
