import JWTKit
import Tree

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TokenVerifier {
    /// The user a JWT names, once its signature and claims are checked.
    func identity(verifying credential: String) async throws(TokenError) -> AuthIdentity {
        let token = Array(credential.utf8)
        try Self.checkShape(of: token)
        let header = try Self.header(of: token)
        let collection = try keys.collection(for: header)
        let claims: TokenClaims
        do {
            claims = try await collection.verify(token, as: TokenClaims.self)
        } catch {
            throw Self.tokenError(from: error)
        }
        // The SDKs make an emulator token once, with `iat` 0 unless told otherwise, and send it for the
        // whole session, so its times and project say nothing; being unsigned, nothing else in it is proof.
        if header.alg != "none" {
            try check(claims)
        }
        guard let uid = claims.uid else { throw .missingSubject }
        return AuthIdentity(
            uid: uid,
            provider: claims.provider,
            token: .object(claims.all),
            // An emulator token's `exp` is not checked, so it does not end the session either.
            expiresAt: header.alg == "none" ? nil : claims.expiration?.value
        )
    }

    /// The claims a signed token must satisfy: first those a fresh token would not fix, then the times.
    private func check(_ claims: TokenClaims) throws(TokenError) {
        if let issuer = configuration.issuer, claims.issuer?.value != issuer {
            throw .wrongIssuer(expected: issuer, got: claims.issuer?.value)
        }
        if let audience = configuration.audience, claims.audience?.value.contains(audience) != true {
            throw .wrongAudience(expected: audience, got: claims.audience?.value ?? [])
        }
        let now = configuration.now()
        let skew = configuration.clockSkew
        guard let expiry = claims.expiration?.value else { throw .missingExpiry }
        guard now < expiry.addingTimeInterval(skew) else { throw .expired(at: expiry) }
        if let notBefore = claims.notBefore?.value, notBefore > now.addingTimeInterval(skew) {
            throw .notYetValid(claim: "nbf", validFrom: notBefore)
        }
        if let issuedAt = claims.issuedAt?.value, issuedAt > now.addingTimeInterval(skew) {
            throw .notYetValid(claim: "iat", validFrom: issuedAt)
        }
    }

    /// Checks the token is three base64url parts, saying which part is wrong where jwt-kit would only say
    /// "Token is not split in 3 parts" or "Header and payload must be UTF-8 encoded".
    private static func checkShape(of token: [UInt8]) throws(TokenError) {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed(reason: "expected 3 base64url parts separated by \".\", found \(parts.count)")
        }
        for (name, part) in zip(["header", "payload", "signature"], parts) where !part.allSatisfy(isBase64URL) {
            throw .malformed(reason: "the \(name) is not base64url")
        }
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// The token's header, decoded by jwt-kit without looking at the payload's claims.
    private static func header(of token: [UInt8]) throws(TokenError) -> JWTHeader {
        let header: JWTHeader
        do {
            header = try DefaultJWTParser().parse(token, as: UndecodedClaims.self).header
        } catch {
            throw tokenError(from: error)
        }
        if header.fields["crit"] != nil {
            throw .malformed(reason: "critical header parameters (crit) are not supported")
        }
        return header
    }

    private static func tokenError(from error: any Error) -> TokenError {
        guard let error = error as? JWTError else { return .badSignature }
        switch error.errorType {
        case .malformedToken: return .malformed(reason: error.reason ?? "not a JWT")
        default: return .badSignature
        }
    }
}
