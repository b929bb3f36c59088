import NIOCore
import NIOWebSocket

/// Joins a fragmented WebSocket message into one frame, as `NIOWebSocketFrameAggregator` does, and
/// with its errors, but inside the connection's own handler: an idle connection keeps no handler
/// and pipeline context of its own for it, and no storage until a message comes in fragments.
///
/// Control frames, which may come between the fragments of a message, pass through at once.
struct WebSocketFragments {
    /// A message of more fragments than this is refused.
    static let maxFragmentCount = 1 << 16

    /// The largest message, in payload bytes.
    let maxMessageBytes: Int
    private var buffered: [InboundFrame] = []
    private var bufferedBytes = 0

    init(maxMessageBytes: Int) { self.maxMessageBytes = maxMessageBytes }

    /// Takes one frame; returns a whole frame (a message or a control frame) when there is one.
    mutating func take(
        _ frame: InboundFrame, allocator: ByteBufferAllocator
    ) throws(NIOWebSocketFrameAggregator.Error) -> InboundFrame? {
        do throws(NIOWebSocketFrameAggregator.Error) {
            switch frame.opcode {
            case .continuation:
                guard let opcode = buffered.first?.opcode else {
                    throw NIOWebSocketFrameAggregator.Error.didReceiveFragmentBeforeReceivingTextOrBinaryFrame
                }
                try buffer(frame)
                guard frame.fin else { return nil }
                var data = allocator.buffer(capacity: bufferedBytes)
                for fragment in buffered {
                    var unmasked = fragment.unmaskedData
                    data.writeBuffer(&unmasked)
                }
                clear()
                return InboundFrame(fin: true, opcode: opcode, data: data)
            case .binary, .text:
                if frame.fin {
                    guard buffered.isEmpty else {
                        throw NIOWebSocketFrameAggregator.Error.receivedNewFrameWithoutFinishingPrevious
                    }
                    return frame
                }
                try buffer(frame)
                return nil
            default:
                return frame
            }
        } catch {
            clear()
            throw error
        }
    }

    private mutating func buffer(_ frame: InboundFrame) throws(NIOWebSocketFrameAggregator.Error) {
        guard buffered.isEmpty || frame.opcode == .continuation else { throw .receivedNewFrameWithoutFinishingPrevious }
        guard buffered.count < Self.maxFragmentCount else { throw .tooManyFragments }
        // A fragment that is not the last is followed by one more at least.
        guard frame.fin || buffered.count + 1 < Self.maxFragmentCount else { throw .tooManyFragments }
        buffered.append(frame)
        bufferedBytes += frame.length
        guard bufferedBytes <= maxMessageBytes else { throw .accumulatedFrameSizeIsTooLarge }
    }

    /// Lets the fragments go, and their storage with them once the message was large.
    private mutating func clear() {
        buffered.removeAll(keepingCapacity: buffered.capacity <= 16)
        bufferedBytes = 0
    }
}
