import NIOCore
import Transport
import Tree

/// The credential step of one load connection: once greeted, the connection sends its token in an
/// `auth` request, and hands the session the hello only once the server accepted it, so a
/// session's first request already runs as that identity.
struct LoadAuthentication {
    let token: String
    /// `host:port`, for the message of a refusal.
    let server: String
    /// Succeeds once the server accepted the token; fails with
    /// ``LoadError/tokenRefused(server:status:reason:)`` otherwise.
    let accepted: EventLoopPromise<Void>
    /// The hello, held back until the token is accepted.
    private var hello: String?

    init(token: String, server: String, accepted: EventLoopPromise<Void>) {
        self.token = token
        self.server = server
        self.accepted = accepted
    }

    /// The request number of the `auth` request: answered before the session sends anything.
    static let requestNumber = 1

    /// What to do with a message received before the token was accepted.
    enum Step {
        /// Send this request (the `auth` request, once greeted).
        case send(String)
        /// The token was accepted: hand the session this hello.
        case accepted(hello: String)
        case refused(LoadError)
        /// Nothing to do (a message before the hello).
        case ignored
    }

    mutating func received(_ text: String) -> Step {
        guard let hello else {
            guard MessageText.isHello(text) else { return .ignored }
            self.hello = text
            let request = ClientRequest(number: Self.requestNumber, action: .auth(credential: token))
            return .send(ClientMessage.request(request).json.serialized())
        }
        guard let json = try? JSONValue(parsing: text), let message = try? ServerMessage(json: json),
            case .response(Self.requestNumber, let status, let data) = message
        else { return .ignored }
        guard status == .ok else {
            return .refused(.tokenRefused(server: server, status: status.text, reason: data.stringValue ?? ""))
        }
        return .accepted(hello: hello)
    }
}
