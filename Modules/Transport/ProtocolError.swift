/// A realtime-protocol message that could not be understood, and why.
public enum ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The frame text is not JSON.
    case malformedJSON(String)
    /// The JSON is not a message of the protocol.
    case malformedMessage(String)
    /// A request body lacks a member or has one of the wrong type.
    case invalidRequest(number: Int, reason: String)
    /// A message is larger than the configured cap.
    case messageTooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .malformedJSON(let reason): "malformed JSON: \(reason)"
        case .malformedMessage(let reason): "malformed message: \(reason)"
        case .invalidRequest(let number, let reason): "invalid request \(number): \(reason)"
        case .messageTooLarge(let bytes, let limit): "message of \(bytes) bytes exceeds the limit of \(limit)"
        }
    }
}
