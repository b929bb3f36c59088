import Auth
import Foundation
import Synchronization
import Transport

/// Checks the credentials clients present, with the verifier made when the server starts.
final class Authenticator: Sendable {
    private let verifier = Mutex<(verifier: TokenVerifier, ownerRefusal: String)?>(nil)

    /// Starts accepting credentials; `ownerRefusal` is what a client that sends `owner` is told
    /// when `verifier` does not take it as the admin.
    func start(_ verifier: TokenVerifier, ownerRefusal: String) {
        self.verifier.withLock { $0 = (verifier, ownerRefusal) }
    }

    /// Why a credential was not accepted: the token's own problem, or a server with no verifier.
    enum Refusal: Error {
        case token(TokenError)
        /// `owner` where it is not the admin, with what to do instead.
        case owner(String)
        case notStarted

        /// The realtime protocol's status for the refusal (`expired_token` or `invalid_token`).
        var status: ResponseStatus {
            if case .token(let error) = self { return ResponseStatus(error.wireStatus) }
            return .invalidToken
        }

        var message: String {
            switch self {
            case .token(let error): error.description
            case .owner(let message): message
            case .notStarted: "the server is not accepting credentials yet"
            }
        }
    }

    /// The caller `credential` names, and when it stops being valid (`nil`: never): its expiry plus
    /// the clock skew the verifier allows, as a connection that presented it is not refused earlier
    /// than a new one would be.
    func verify(_ credential: String) async throws(Refusal) -> (caller: Caller, expiresAt: Date?) {
        guard let (verifier, ownerRefusal) = verifier.withLock({ $0 }) else { throw .notStarted }
        do {
            let verified = try await verifier.verify(credential)
            switch verified {
            case .admin: return (.admin, nil)
            case .user(let identity):
                let skew = verifier.configuration.clockSkew
                return (Caller(verified), identity.expiresAt.map { $0.addingTimeInterval(skew) })
            }
        } catch .ownerNotAccepted {
            throw .owner(ownerRefusal)
        } catch {
            throw .token(error)
        }
    }
}
