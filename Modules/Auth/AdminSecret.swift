import Crypto

/// A secret compared in constant time: both sides are hashed, so neither the secret's length nor how much of
/// it a guess got right shows in how long a comparison takes.
struct AdminSecret: Sendable {
    private let digest: SHA256.Digest

    init(_ secret: String) {
        digest = SHA256.hash(data: Array(secret.utf8))
    }

    func matches(_ credential: String) -> Bool {
        SHA256.hash(data: Array(credential.utf8)) == digest
    }
}
