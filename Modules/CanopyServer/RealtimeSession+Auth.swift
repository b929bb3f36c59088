import Auth
import Foundation
import Logging
import Rules
import Transport
import Tree

/// What a `gauth` request asks for besides its admin credential.
struct AdminAuth {
    /// `authvar`: act as this identity under the rules (`.null`: unauthenticated); `nil`: as the admin.
    var authVariable: JSONValue?
}

extension RealtimeSession {
    /// `auth` and `gauth`: verifies `credential`; once accepted the session acts as its caller
    /// (for `gauth` with an `authvar`, as that identity), its listens are checked again, and the
    /// answer carries the `auth` variable and when the credential expires. A refused credential
    /// changes nothing and is answered `invalid_token` or `expired_token` with the reason.
    func authenticate(credential: String, admin: AdminAuth?, request number: Int, database: Database) async {
        let connection = connection
        func refuse(_ status: ResponseStatus, _ message: String) {
            connection.send(.response(number: number, status: status, data: .string(message)))
        }
        let verified: (caller: Caller, expiresAt: Date?)
        do {
            verified = try await context.authenticator.verify(credential)
        } catch {
            context.logger.debug("credential refused", metadata: ["session": "\(id)", "why": "\(error.message)"])
            return refuse(error.status, error.message)
        }
        var caller = verified.caller
        if caller.isAdmin,
            let refusal = context.adminOrigins.refusal(
                origin: client.pageOrigin, host: client.host, credential: credential)
        {
            context.logger.debug("admin credential refused", metadata: ["session": "\(id)", "why": "\(refusal)"])
            return refuse(.permissionDenied, refusal)
        }
        if let admin {
            guard caller.isAdmin else { return refuse(.invalidToken, "gauth needs an admin credential") }
            if let authVariable = admin.authVariable {
                do {
                    caller = Caller(override: try AuthVariableOverride(authVariable))
                } catch {
                    return refuse(.invalidToken, error.description)
                }
            }
        }
        await setCaller(caller, expiresAt: verified.expiresAt, database: database)
        var answer: [String: JSONValue] = ["auth": caller.auth?.variable.json() ?? .null]
        if let expiresAt = verified.expiresAt { answer["expires"] = .number(expiresAt.timeIntervalSince1970.rounded()) }
        connection.send(.ok(number, data: .object(answer)))
    }
}
