import JWTKit
import Tree

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A token's payload: the registered claims a verifier checks, typed, and every claim as JSON for the rules.
struct TokenClaims: JWTPayload {
    var subject: SubjectClaim?
    var issuer: IssuerClaim?
    var audience: AudienceClaim?
    var expiration: ExpirationClaim?
    var notBefore: NotBeforeClaim?
    var issuedAt: IssuedAtClaim?
    var all: [String: JSONValue]

    private enum CodingKeys: String, CodingKey {
        case subject = "sub"
        case issuer = "iss"
        case audience = "aud"
        case expiration = "exp"
        case notBefore = "nbf"
        case issuedAt = "iat"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        subject = try container.decodeIfPresent(SubjectClaim.self, forKey: .subject)
        issuer = try container.decodeIfPresent(IssuerClaim.self, forKey: .issuer)
        audience = try container.decodeIfPresent(AudienceClaim.self, forKey: .audience)
        expiration = try container.decodeIfPresent(ExpirationClaim.self, forKey: .expiration)
        notBefore = try container.decodeIfPresent(NotBeforeClaim.self, forKey: .notBefore)
        issuedAt = try container.decodeIfPresent(IssuedAtClaim.self, forKey: .issuedAt)
        guard let members = try JSONValue(from: decoder).objectValue else {
            throw DecodingError.typeMismatch(
                [String: JSONValue].self,
                .init(codingPath: decoder.codingPath, debugDescription: "the payload is not a JSON object")
            )
        }
        all = members
    }

    func encode(to encoder: any Encoder) throws {
        try JSONValue.object(all).encode(to: encoder)
    }

    /// Does nothing: the verifier checks the claims itself, against its configuration and clock, which
    /// jwt-kit's hook cannot see.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// The user the token names: `sub`, else the `uid` or `user_id` claim; empty strings do not count.
    var uid: String? {
        let candidates = [subject?.value, all["uid"]?.stringValue, all["user_id"]?.stringValue]
        return candidates.lazy.compactMap { $0 }.first { !$0.isEmpty }
    }

    /// How the user signed in (`firebase.sign_in_provider`); tokens that do not say are custom tokens.
    var provider: String {
        all["firebase"]?["sign_in_provider"]?.stringValue ?? "custom"
    }
}

/// A payload that is not decoded: what a verifier asks jwt-kit for when it only needs the header.
struct UndecodedClaims: JWTPayload {
    init(from decoder: any Decoder) throws {}

    func encode(to encoder: any Encoder) throws {}

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
