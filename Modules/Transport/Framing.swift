/// Joins the text frames of one WebSocket connection into messages.
///
/// A message longer than ``maxFrameCharacters`` is sent as a frame holding the number of frames
/// that follow (at most six digits), then the frames; a lone `"0"` is a keepalive.
///
/// ```swift
/// var assembler = FrameAssembler()
/// assembler.append("2")           // nil: two frames follow
/// assembler.append(#"{"t":"#)     // nil
/// assembler.append(#""d"}"#)      // .message(#"{"t":"d"}"#)
/// ```
public struct FrameAssembler: Sendable {
    /// What one frame completed.
    public enum Output: Sendable, Equatable {
        case message(String)
        case keepalive
    }

    /// The largest frame text, in characters, that senders produce.
    public static let maxFrameCharacters = 16384

    private var expected = 0
    private var pending: [String] = []
    /// Messages (assembled) longer than this many UTF-8 bytes are refused.
    public let maxMessageBytes: Int
    private var pendingBytes = 0

    public init(maxMessageBytes: Int = 256 * 1024 * 1024) { self.maxMessageBytes = maxMessageBytes }

    /// Takes one frame; returns a message when the frame completes one.
    public mutating func append(_ frame: String) throws(ProtocolError) -> Output? {
        if expected == 0 {
            if frame.utf8.count <= 6, let count = Int(frame), count >= 0 {
                if count == 0 { return .keepalive }
                expected = count
                pending = []
                pendingBytes = 0
                return nil
            }
            try check(frame.utf8.count)
            return .message(frame)
        }
        pendingBytes += frame.utf8.count
        try check(pendingBytes)
        pending.append(frame)
        guard pending.count == expected else { return nil }
        let message = pending.joined()
        expected = 0
        pending = []
        pendingBytes = 0
        return .message(message)
    }

    private mutating func check(_ bytes: Int) throws(ProtocolError) {
        if bytes > maxMessageBytes {
            expected = 0
            pending = []
            pendingBytes = 0
            throw .messageTooLarge(bytes: bytes, limit: maxMessageBytes)
        }
    }

    /// Whether `message` fits in one frame (no character count is needed when its UTF-8 bytes,
    /// which never number fewer than its characters, already fit).
    public static func fitsOneFrame(_ message: String, maxFrameCharacters: Int = maxFrameCharacters) -> Bool {
        message.utf8.count <= maxFrameCharacters || message.count <= maxFrameCharacters
    }

    /// The frames to send for `message`: the message itself, or a count frame and the pieces.
    public static func frames(for message: String, maxFrameCharacters: Int = maxFrameCharacters) -> [String] {
        guard !fitsOneFrame(message, maxFrameCharacters: maxFrameCharacters) else { return [message] }
        var frames: [String] = []
        var start = message.startIndex
        while start != message.endIndex {
            let end =
                message.index(start, offsetBy: maxFrameCharacters, limitedBy: message.endIndex) ?? message.endIndex
            frames.append(String(message[start..<end]))
            start = end
        }
        return [String(frames.count)] + frames
    }
}
