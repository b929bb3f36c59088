import NIOCore
public import Query
import Synchronization
import Transport
public import Tree

/// A data update for listeners: the wire `d` (overwrite) or `m` (merge) message.
///
/// One push is shared by every plain listener at the same location, and its wire frames are
/// encoded once, however many connections they go to.
public final class Push: Sendable {
    public enum Kind: Sendable { case overwrite, merge }

    public let kind: Kind
    /// The absolute location the data is at (for merges, the location the member paths are relative to).
    public let path: Path
    /// Export-format JSON: for merges, an object of relative paths.
    public let data: JSONValue
    /// The filtered query the push is for, if any.
    public let tag: Int?
    private let encoded = Mutex<ByteBuffer?>(nil)

    public init(kind: Kind, path: Path, data: JSONValue, tag: Int?) {
        self.kind = kind
        self.path = path
        self.data = data
        self.tag = tag
    }

    /// The realtime-protocol message of this push as WebSocket frames (split as the protocol
    /// splits long messages), encoded and framed once and shared by every connection it goes to.
    var wireFrames: ByteBuffer {
        if let buffer = encoded.withLock({ $0 }) { return buffer }
        let message: ServerMessage =
            switch kind {
            case .overwrite: .overwrite(path: path.wireString, data: data, tag: tag)
            case .merge: .merge(path: path.wireString, data: data, tag: tag)
            }
        let buffer = OutboundFrames.frames(of: message.text)
        encoded.withLock { $0 = buffer }
        return buffer
    }
}

/// Something that receives pushes: a realtime connection or a REST event stream.
///
/// `deliver` must not block: it queues the push for the subscriber's own writer.
public protocol Subscriber: AnyObject, Sendable {
    /// Unique among live subscribers.
    var subscriberID: Int { get }
    func deliver(_ push: Push)
    /// The listen at `path` with `params` was removed: the rules no longer allow its reader.
    func revoke(path: Path, params: QueryParams)
    /// The database stopped serving here (another server took its namespace over): end the
    /// connection, so that the client reconnects.
    func end()
}

/// Hands out subscriber ids.
enum SubscriberIDs {
    private static let next = Atomic<Int>(1)
    static func make() -> Int { next.add(1, ordering: .relaxed).oldValue }
}
