import Auth
import Foundation
import HTTPTypes
import Hummingbird

extension RESTController {
    /// Why a REST request's credentials were not accepted.
    struct CredentialRefusal: Error {
        let message: String
        /// `403` for the admin credential from a page of another origin (``AdminOriginCheck``).
        var status: HTTPResponse.Status = .unauthorized

        var response: Response { RESTResponse.error(status, message) }
    }

    /// Who a REST request acts as, and until when (`nil`: no end): the credential of `?auth=`,
    /// `?access_token=` or `Authorization: Bearer` (none: unauthenticated), then, for the admin
    /// only, `auth_variable_override` (a JSON identity, or `null` for unauthenticated). The admin
    /// credential from a browser page of another origin is refused (``AdminOriginCheck``).
    func caller(of request: Request, rest: RESTRequest) async -> Result<(Caller, expiresAt: Date?), CredentialRefusal> {
        var credential = rest.parameters["auth"] ?? rest.parameters["access_token"]
        if credential == nil, let header = request.headers[.authorization] {
            guard header.lowercased().hasPrefix("bearer ") else {
                return .failure(CredentialRefusal(message: "Unsupported Authorization header: expected 'Bearer TOKEN'"))
            }
            credential = String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        }
        var caller = Caller.unauthenticated
        var expiresAt: Date?
        if let credential, !credential.isEmpty {
            do {
                (caller, expiresAt) = try await authenticator.verify(credential)
            } catch {
                return .failure(CredentialRefusal(message: error.message))
            }
            if caller.isAdmin,
                let refusal = adminOrigins.refusal(
                    origin: request.headers[.origin], host: request.head.authority, credential: credential)
            {
                return .failure(CredentialRefusal(message: refusal, status: .forbidden))
            }
        }
        if let override = rest.parameters["auth_variable_override"] {
            guard caller.isAdmin else {
                return .failure(CredentialRefusal(message: "auth_variable_override needs admin credentials"))
            }
            do {
                caller = Caller(override: try AuthVariableOverride(parsing: override))
            } catch {
                return .failure(CredentialRefusal(message: error.description))
            }
        }
        return .success((caller, expiresAt))
    }
}
